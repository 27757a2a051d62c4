"""Smoke test against a real acs server (scripts/clients test starts one).

CLIENTS_SMOKE_URL is its base URL; CLIENTS_SMOKE_AGENT the scripted agent's path inside
machines (default /opt/acs/bin/scripted-agent, bound there by
``sandbox.ro_binds``). Without CLIENTS_SMOKE_URL the test is skipped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator

import httpx
import pytest

from acs_client import Client
from acs_client.api.agents import create_agent
from acs_client.api.auth import login, register
from acs_client.api.conversations import create_conversation, list_conversation_events, terminate_conversation
from acs_client.api.sandboxes import get_sandbox_file
from acs_client.models import (
    AgentCreate,
    AgentData,
    ConversationCreateRequest,
    ConversationData,
    CreatedKeyData,
    LogEventListResponse,
    LoginRequest,
    RegisteredData,
    RegisterRequest,
    Runtime,
    SandboxFileData,
)
from acs_client_ext import afollow_conversation, connect, expect, follow_events, follow_turn, is_turn_end, wait_for_turn

BASE = os.environ.get("CLIENTS_SMOKE_URL")
AGENT = os.environ.get("CLIENTS_SMOKE_AGENT", "/opt/acs/bin/scripted-agent")
PROMPT = "\n".join(
    [
        "say: hello from python",
        "sleep: 800",
        "write: /workspace/py-smoke.txt written by the scripted agent",
        "say: done",
    ]
)


class _Cut(httpx.SyncByteStream):
    """A response body that errors like a dropped connection once ``limit`` bytes went through."""

    def __init__(self, inner: httpx.SyncByteStream, limit: int) -> None:
        self.inner, self.limit = inner, limit

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        for chunk in self.inner:
            if sent + len(chunk) >= self.limit:
                yield chunk[: self.limit - sent]
                raise httpx.ReadError("connection dropped (test)")
            sent += len(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class DroppingTransport(httpx.BaseTransport):
    """Cuts the first stream connection 400 bytes in (mid-frame, most likely)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.drops = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        res = self.inner.handle_request(request)
        if self.drops or not request.url.path.endswith("/stream") or res.status_code != 200:
            return res
        self.drops += 1
        assert isinstance(res.stream, httpx.SyncByteStream)
        return httpx.Response(res.status_code, headers=res.headers, stream=_Cut(res.stream, 400))

    def close(self) -> None:
        self.inner.close()


def _too_long(signum: int, frame: object) -> None:
    raise TimeoutError("the smoke test ran over 120 s")


@pytest.mark.skipif(not BASE, reason="CLIENTS_SMOKE_URL is not set")
def test_first_turn() -> None:
    assert BASE
    # A follower never ends by itself: a turn that never closes must fail the test, not hang it.
    signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(120)
    try:
        first_turn(BASE)
    finally:
        signal.alarm(0)


def first_turn(base: str) -> None:
    # Register and sign in: login answers a full-scope key.
    anon = Client(base_url=base)
    email = f"py-smoke-{uuid.uuid4().hex[:12]}@example.com"
    password = "correct horse battery"
    expect(register.sync_detailed(client=anon, body=RegisterRequest(email=email, password=password)), RegisteredData)
    created_key = expect(
        login.sync_detailed(client=anon, body=LoginRequest(email=email, password=password)), CreatedKeyData
    )

    transport = DroppingTransport()
    acs = connect(base, created_key.data.api_key, httpx_args={"transport": transport})

    agent = expect(
        create_agent.sync_detailed(client=acs, body=AgentCreate(name="py-smoke", runtime=Runtime.ACP, command=[AGENT])),
        AgentData,
    ).data
    created = create_conversation.sync_detailed(
        client=acs,
        body=ConversationCreateRequest(agent_id=agent.id, prompt=PROMPT, client_request_id="py-smoke-1"),
    )
    assert created.status_code == 201, created.content
    conversation = expect(created, ConversationData).data
    sandbox_id = conversation.sandbox_id
    assert isinstance(sandbox_id, uuid.UUID), "the conversation has a sandbox"

    try:
        # Follow the turn's events over SSE until its closing event; the first connection drops.
        reconnects: list[int | None] = []
        events = list(
            follow_turn(
                acs,
                conversation.id,
                client_request_id="py-smoke-1",
                retry=0.1,
                on_reconnect=lambda last, attempt, error: reconnects.append(last),
            )
        )
        assert transport.drops == 1, "the first stream connection was cut"
        assert reconnects, "the follower reconnected"
        end = events[-1]
        assert is_turn_end(end) and end.data["state"] == "done"
        turn_id = end.data["turn_id"]
        text = "".join(e.data["data"] for e in events if e.data["kind"] == "output")
        assert "hello from python" in text and "done" in text

        # Nothing lost or repeated across the drop: the same ids as the log, in order.
        log = expect(
            list_conversation_events.sync_detailed(conversation.id, client=acs, limit=5000), LogEventListResponse
        )
        assert [e.id for e in events] == [e.id for e in log.data if str(e.turn_id) == turn_id]

        # The turn is done by the turns list too.
        turn = wait_for_turn(acs, conversation.id, client_request_id="py-smoke-1", timeout=30)
        assert str(turn.id) == turn_id
        assert turn.status == "done"

        # The account-wide stream carries the same closing event.
        for e in follow_events(acs):
            if is_turn_end(e) and e.data.get("conversation_id") == str(conversation.id):
                assert e.id == end.id
                break

        # The async follower reads the same events (a client without the sync test transport).
        async def read_async() -> list[int | None]:
            ids: list[int | None] = []
            stream = afollow_conversation(connect(base, created_key.data.api_key), conversation.id)
            async for e in stream:
                if e.data.get("turn_id") == turn_id:
                    ids.append(e.id)
                if e.id == end.id:
                    break
            await stream.aclose()
            return ids

        assert asyncio.run(read_async()) == [e.id for e in events]

        # The file the agent wrote, read from the sandbox.
        file = expect(
            get_sandbox_file.sync_detailed(sandbox_id, client=acs, path="/workspace/py-smoke.txt"), SandboxFileData
        )
        assert file.data.encoding == "utf-8"
        assert file.data.content == "written by the scripted agent"
    finally:
        # Ends the conversation, which reclaims its ephemeral machine.
        terminate_conversation.sync_detailed(conversation.id, client=acs)
