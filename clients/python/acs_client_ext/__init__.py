"""The hand-written part of acs's Python SDK: what a generator cannot do.

``acs_client`` (generated from the OpenAPI document by openapi-python-client) holds every
operation (``acs_client.api.<tag>.<operation>``) and model; this package adds:

- ``connect``: an ``AuthenticatedClient`` for a base URL and an API key;
- ``expect``/``ApiError``: a generated answer's success model, or an exception;
- ``follow_conversation``/``follow_events``/``follow_team`` (and ``afollow_*``): the SSE
  streams, parsed, resumed with ``Last-Event-ID`` after a drop;
- ``wait_for_turn`` (polling) and ``follow_turn`` (the stream) to wait for a turn to end.
"""

from __future__ import annotations

from typing import Any

from acs_client import AuthenticatedClient

from .errors import ApiError, expect
from .stream import (
    SseFrame,
    SseParser,
    StreamDroppedError,
    StreamEvent,
    afollow,
    afollow_conversation,
    afollow_events,
    afollow_team,
    follow,
    follow_conversation,
    follow_events,
    follow_team,
)
from .turns import follow_turn, is_turn_end, stage_data, wait_for_turn


def connect(base_url: str, api_key: str, **kwargs: Any) -> AuthenticatedClient:
    """A client for the server at ``base_url`` (without ``/api``: ``http://127.0.0.1:8080``) that
    sends ``Authorization: Bearer <api_key>``; ``kwargs`` go to ``AuthenticatedClient``
    (``timeout``, ``httpx_args``, ...)."""
    return AuthenticatedClient(base_url=base_url.rstrip("/"), token=api_key, **kwargs)


__all__ = [
    "ApiError",
    "SseFrame",
    "SseParser",
    "StreamDroppedError",
    "StreamEvent",
    "afollow",
    "afollow_conversation",
    "afollow_events",
    "afollow_team",
    "connect",
    "expect",
    "follow",
    "follow_conversation",
    "follow_events",
    "follow_team",
    "follow_turn",
    "is_turn_end",
    "stage_data",
    "wait_for_turn",
]
