"""Waiting for a turn to end, by polling its list or by watching the conversation's stream
(hand-written; ``scripts/clients generate`` never touches it)."""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from typing import Any
from uuid import UUID

from acs_client import AuthenticatedClient
from acs_client.api.conversations import list_conversation_turns
from acs_client.models.turn import Turn
from acs_client.models.turn_list_response import TurnListResponse
from acs_client.models.turn_status import TurnStatus

from .errors import expect
from .stream import StreamEvent, follow_conversation


def _pick(turns: list[Turn], turn_id: UUID | str | None, client_request_id: str | None) -> Turn | None:
    if turn_id is not None:
        return next((t for t in turns if str(t.id) == str(turn_id)), None)
    if client_request_id is not None:
        return next((t for t in reversed(turns) if t.client_request_id == client_request_id), None)
    return turns[-1] if turns else None


def wait_for_turn(
    client: AuthenticatedClient,
    conversation_id: UUID | str,
    *,
    turn_id: UUID | str | None = None,
    client_request_id: str | None = None,
    timeout: float = 120.0,
    interval: float = 0.25,
) -> Turn:
    """Polls ``GET /api/conversations/{id}/turns`` until the chosen turn (by ``turn_id``, by the
    ``client_request_id`` sent with its prompt, else the latest) exists and is no longer
    ``running``; returns it (status ``done``, ``failed`` or ``interrupted``).
    ``TimeoutError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    conversation = UUID(str(conversation_id))
    while True:
        res = list_conversation_turns.sync_detailed(conversation, client=client)
        if res.status_code != 429:
            turns = expect(res, TurnListResponse).data
            turn = _pick(turns, turn_id, client_request_id)
            if turn is not None and turn.status != TurnStatus.RUNNING:
                return turn
        if time.monotonic() > deadline:
            raise TimeoutError(f"the turn of conversation {conversation} did not end within {timeout} s")
        time.sleep(interval)


def stage_data(event: StreamEvent) -> dict[str, Any]:
    """A stage event's ``data``: its JSON-encoded metadata (an object), ``{}`` when it is not one."""
    try:
        v = json.loads(event.data.get("data", "")) if isinstance(event.data, dict) else None
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def is_turn_end(event: StreamEvent) -> bool:
    """Whether ``event`` is the ``turn`` stage event that ends a turn (``done``, ``failed``, ``interrupted``)."""
    d = event.data
    return (
        event.id is not None
        and isinstance(d, dict)
        and d.get("kind") == "stage"
        and d.get("stage") == "turn"
        and d.get("state") != "started"
    )


def follow_turn(
    client: AuthenticatedClient,
    conversation_id: UUID | str,
    *,
    turn_id: UUID | str | None = None,
    client_request_id: str | None = None,
    **options: Any,
) -> Generator[StreamEvent, None, None]:
    """Follows the conversation's stream (from the start, or after ``last_event_id``) and yields
    the events of one turn, its closing ``turn`` stage event last; then stops. The turn is chosen
    by ``turn_id`` or ``client_request_id``, else it is the first turn that starts on the stream.
    ``options`` go to ``follow`` (``retry``, ``on_reconnect``, ...)."""
    want = None if turn_id is None else str(turn_id)
    stream = follow_conversation(client, conversation_id, **options)
    try:
        for e in stream:
            if e.id is None or not isinstance(e.data, dict):
                continue
            d = e.data
            if want is None and d.get("kind") == "stage" and d.get("stage") == "turn" and d.get("state") == "started":
                if client_request_id is None or stage_data(e).get("client_request_id") == client_request_id:
                    want = d.get("turn_id")
            if want is None or d.get("turn_id") != want:
                continue
            yield e
            if is_turn_end(e):
                return
    finally:
        stream.close()
