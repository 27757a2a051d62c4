"""Following acs's three SSE streams (hand-written; ``scripts/clients generate`` never touches it).

A generator hands the ``text/event-stream`` body back as one string; these
functions parse its frames as they arrive and reconnect after a drop with
``Last-Event-ID``, so each event arrives once:

=====================================  ==========================================
``GET /api/conversations/{id}/stream``  ``follow_conversation(client, id)``
``GET /api/events/stream``              ``follow_events(client)``
``GET /api/team/stream``                ``follow_team(client)``
=====================================  ==========================================

Each has an ``a``-prefixed ``async`` twin (``afollow_conversation``, ...).
Frames: ``id: <event id>`` + ``data: <StreamLogEvent JSON>``; signal frames
carry an ``event:`` name and no id; lines starting with ``:`` keep the
connection alive (the server sends one every 15 s).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
import time
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from acs_client import AuthenticatedClient, Client
from acs_client.models.stream_log_event import StreamLogEvent

from .errors import ApiError

OnReconnect = Callable[[int | None, int, BaseException | None], None]
"""Called before each reconnect with the id it resumes after, the attempt number and the error."""


@dataclass(frozen=True)
class SseFrame:
    """One dispatched frame: its own ``id:`` field (if any), ``event:`` name and joined ``data:`` lines."""

    id: str | None
    event: str
    data: str


@dataclass(frozen=True)
class StreamEvent:
    """What a stream yields: a log event (``id`` set, ``data`` a ``StreamLogEvent``), or a signal
    frame (``id`` None, ``event`` its name, ``data`` the decoded JSON)."""

    id: int | None
    event: str
    data: Any

    @property
    def is_signal(self) -> bool:
        return self.id is None

    @property
    def log_event(self) -> StreamLogEvent:
        """The event as the generated model (log events only)."""
        if self.id is None:
            raise ValueError(f"a `{self.event}` signal frame is not a log event")
        return StreamLogEvent.from_dict(self.data)


_NEWLINE = re.compile(r"\r\n|\r|\n")


class SseParser:
    """The ``text/event-stream`` format (the WHATWG HTML standard's parsing rules).

    Feed it decoded text in pieces of any size; it returns the frames each piece
    completes. Comments and frames without data are skipped; a frame cut off by a
    drop is never returned. ``retry`` holds the last ``retry:`` value in ms.
    """

    def __init__(self) -> None:
        self.retry: int | None = None
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def push(self, text: str) -> list[SseFrame]:
        self._buffer += text
        frames: list[SseFrame] = []
        while True:
            m = _NEWLINE.search(self._buffer)
            # A lone `\r` at the end may be the first half of `\r\n`: wait for more.
            if m is None or (m.group() == "\r" and m.end() == len(self._buffer)):
                return frames
            line, self._buffer = self._buffer[: m.start()], self._buffer[m.end() :]
            frame = self._line(line)
            if frame is not None:
                frames.append(frame)

    def _line(self, line: str) -> SseFrame | None:
        if line == "":
            frame = SseFrame(self._id, self._event or "message", "\n".join(self._data)) if self._data else None
            self._data, self._event, self._id = [], "", None
            return frame
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "retry" and _digits(value):
            self.retry = int(value)
        return None


def _digits(s: str) -> bool:
    return s.isascii() and s.isdigit()


def _to_event(frame: SseFrame) -> StreamEvent:
    try:
        data = json.loads(frame.data)
    except ValueError:  # acs sends JSON; anything else is passed on as text
        data = frame.data
    if frame.id is not None and _digits(frame.id):
        return StreamEvent(int(frame.id), frame.event, data)
    return StreamEvent(None, frame.event, data)


class StreamDroppedError(Exception):
    """The stream dropped more than ``max_retries`` times in a row; ``__cause__`` is the last error."""


class _Follow:
    """The reconnecting state shared by the sync and async followers."""

    def __init__(
        self,
        path: str,
        blocks: bool | None,
        last_event_id: int | str | None,
        retry: float,
        max_retries: int,
        idle_timeout: float,
        on_reconnect: OnReconnect | None,
    ) -> None:
        self.path = path
        self.params = {} if blocks is None else {"blocks": "true" if blocks else "false"}
        self.last = None if last_event_id is None else int(last_event_id)
        self.retry = retry
        self.max_retries = max_retries
        self.timeout = httpx.Timeout(10.0, read=idle_timeout)
        self.on_reconnect = on_reconnect
        self.failures = 0
        self.retry_after = 0.0

    def headers(self) -> dict[str, str]:
        h = {"Accept": "text/event-stream"}
        if self.last is not None:
            h["Last-Event-ID"] = str(self.last)
        return h

    def refused(self, res: httpx.Response) -> BaseException:
        """The error of a non-200 answer; raised at once unless it is 429 or 5xx."""
        try:
            body = res.json()
        except ValueError:
            body = res.text
        err = ApiError(res.status_code, body)
        if res.status_code != 429 and res.status_code < 500:
            raise err
        after = res.headers.get("Retry-After", "")
        if _digits(after):
            self.retry_after = float(after)
        return err

    def seen(self, event: StreamEvent) -> None:
        self.failures = 0
        if event.id is not None:
            self.last = event.id

    def dropped(self, error: BaseException | None) -> float:
        """Counts a drop; the pause before the next connection."""
        self.failures += 1
        if self.failures > self.max_retries:
            raise StreamDroppedError(f"stream dropped {self.failures} times in a row") from error
        if self.on_reconnect is not None:
            self.on_reconnect(self.last, self.failures, error)
        wait, self.retry_after = max(self.retry, self.retry_after), 0.0
        return wait


def follow(
    client: AuthenticatedClient | Client,
    path: str,
    *,
    blocks: bool | None = None,
    last_event_id: int | str | None = None,
    retry: float = 1.0,
    max_retries: int = 10,
    idle_timeout: float = 45.0,
    on_reconnect: OnReconnect | None = None,
) -> Generator[StreamEvent, None, None]:
    """Follows the stream at ``path``: yields its frames and, after a drop (an error, the
    server closing it, ``idle_timeout`` seconds of silence, a 429 or 5xx), opens it again
    after the last event seen, ``retry`` seconds later (a ``retry:`` field replaces that).
    Other answers (401, 403, 404, 422) raise ``ApiError``; ``max_retries`` drops in a row
    without a frame raise ``StreamDroppedError``. Closing the generator (``break``) closes the
    connection."""
    f = _Follow(path, blocks, last_event_id, retry, max_retries, idle_timeout, on_reconnect)
    http = client.get_httpx_client()
    while True:
        error: BaseException | None = ConnectionError("the server closed the stream")
        try:
            with http.stream("GET", f.path, params=f.params, headers=f.headers(), timeout=f.timeout) as res:
                if res.status_code != 200:
                    res.read()
                    error = f.refused(res)
                else:
                    parser, decoder = SseParser(), codecs.getincrementaldecoder("utf-8")("replace")
                    for chunk in res.iter_bytes():
                        for frame in parser.push(decoder.decode(chunk)):
                            event = _to_event(frame)
                            f.seen(event)
                            yield event
                        if parser.retry is not None:
                            f.retry = parser.retry / 1000
        except httpx.TransportError as e:
            error = e
        time.sleep(f.dropped(error))


async def afollow(
    client: AuthenticatedClient | Client,
    path: str,
    *,
    blocks: bool | None = None,
    last_event_id: int | str | None = None,
    retry: float = 1.0,
    max_retries: int = 10,
    idle_timeout: float = 45.0,
    on_reconnect: OnReconnect | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """``follow`` with the client's ``httpx.AsyncClient``."""
    f = _Follow(path, blocks, last_event_id, retry, max_retries, idle_timeout, on_reconnect)
    http = client.get_async_httpx_client()
    while True:
        error: BaseException | None = ConnectionError("the server closed the stream")
        try:
            async with http.stream("GET", f.path, params=f.params, headers=f.headers(), timeout=f.timeout) as res:
                if res.status_code != 200:
                    await res.aread()
                    error = f.refused(res)
                else:
                    parser, decoder = SseParser(), codecs.getincrementaldecoder("utf-8")("replace")
                    async for chunk in res.aiter_bytes():
                        for frame in parser.push(decoder.decode(chunk)):
                            event = _to_event(frame)
                            f.seen(event)
                            yield event
                        if parser.retry is not None:
                            f.retry = parser.retry / 1000
        except httpx.TransportError as e:
            error = e
        await asyncio.sleep(f.dropped(error))


def _conversation_path(conversation_id: UUID | str) -> str:
    return f"/api/conversations/{quote(str(conversation_id), safe='')}/stream"


def follow_conversation(
    client: AuthenticatedClient, conversation_id: UUID | str, **options: Any
) -> Generator[StreamEvent, None, None]:
    """A conversation's events: the log from the start (or after ``last_event_id``), then live."""
    return follow(client, _conversation_path(conversation_id), **options)


def follow_events(client: AuthenticatedClient, **options: Any) -> Generator[StreamEvent, None, None]:
    """Every conversation of the account, with ``conversations`` signal frames."""
    return follow(client, "/api/events/stream", **options)


def follow_team(client: AuthenticatedClient, **options: Any) -> Generator[StreamEvent, None, None]:
    """The teammates' conversations, with ``team`` and ``schedule`` signal frames."""
    return follow(client, "/api/team/stream", **options)


def afollow_conversation(
    client: AuthenticatedClient, conversation_id: UUID | str, **options: Any
) -> AsyncGenerator[StreamEvent, None]:
    return afollow(client, _conversation_path(conversation_id), **options)


def afollow_events(client: AuthenticatedClient, **options: Any) -> AsyncGenerator[StreamEvent, None]:
    return afollow(client, "/api/events/stream", **options)


def afollow_team(client: AuthenticatedClient, **options: Any) -> AsyncGenerator[StreamEvent, None]:
    return afollow(client, "/api/team/stream", **options)
