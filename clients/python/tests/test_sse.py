"""The SSE parser and the reconnecting follower, without a server."""

from collections.abc import Iterator

import httpx
import pytest

from acs_client_ext import ApiError, SseFrame, SseParser, connect, follow_conversation


def feed(text: str, size: int) -> list[SseFrame]:
    p = SseParser()
    frames: list[SseFrame] = []
    for i in range(0, len(text), size):
        frames += p.push(text[i : i + size])
    return frames


STREAM = (
    ": keep-alive\n\n"
    'id: 7\ndata: {"kind":"stage"}\n\n'
    'event: conversations\r\ndata: {"reason": "changed"}\r\n\r\n'
    'retry: 250\rid: 8\rdata: {"a":\r\ndata: 1}\r\r'
    "id: 9\ndata: cut off by a drop"
)


def test_frames_in_pieces_of_any_size() -> None:
    want = [
        SseFrame("7", "message", '{"kind":"stage"}'),
        SseFrame(None, "conversations", '{"reason": "changed"}'),
        SseFrame("8", "message", '{"a":\n1}'),
    ]
    for size in (1, 2, 3, 7, 64, len(STREAM)):
        assert feed(STREAM, size) == want, size


def test_retry_and_fields() -> None:
    p = SseParser()
    assert p.push("retry: 250\nretry: x\nid\ndata\n\n") == [SseFrame("", "message", "")]
    assert p.retry == 250


class _Parts(httpx.SyncByteStream):
    """Hands out ``parts``, then ends or errors like a dropped connection."""

    def __init__(self, parts: list[str], fail: bool) -> None:
        self.parts, self.fail = parts, fail

    def __iter__(self) -> Iterator[bytes]:
        for p in self.parts:
            yield p.encode()
        if self.fail:
            raise httpx.ReadError("dropped")


def test_follow_resumes_after_drops_and_stops_on_a_refusal() -> None:
    sent: list[str | None] = []
    answers = [
        lambda: httpx.Response(200, stream=_Parts(['id: 1\ndata: {"n":1}\n\n', 'id: 2\ndata: {"n"'], True)),
        lambda: httpx.Response(503, json={"error": "unavailable"}, headers={"Retry-After": "0"}),
        lambda: httpx.Response(
            200, stream=_Parts(['id: 2\ndata: {"n":2}\n\nevent: conversations\ndata: {"reason":"changed"}\n\n'], False)
        ),
        lambda: httpx.Response(404, json={"error": "not_found", "message": "no such conversation"}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/conversations/c1/stream"
        assert request.headers["authorization"] == "Bearer k"
        sent.append(request.headers.get("last-event-id"))
        return answers[len(sent) - 1]()

    acs = connect("http://acs.test", "k", httpx_args={"transport": httpx.MockTransport(handler)})
    got = []
    reconnects = []
    with pytest.raises(ApiError) as refused:
        for e in follow_conversation(acs, "c1", retry=0.001, on_reconnect=lambda *a: reconnects.append(a)):
            got.append(e)
    assert refused.value.status == 404 and refused.value.code == "not_found"
    assert sent == [None, "1", "1", "2"]
    assert len(reconnects) == 3
    assert [(e.id, e.event, e.data) for e in got] == [
        (1, "message", {"n": 1}),
        (2, "message", {"n": 2}),
        (None, "conversations", {"reason": "changed"}),
    ]
