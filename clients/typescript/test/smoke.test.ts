// Smoke test against a real acs server (scripts/clients test starts one):
// CLIENTS_SMOKE_URL is its base URL; CLIENTS_SMOKE_AGENT the scripted agent's path
// inside machines (default /opt/acs/bin/scripted-agent, bound there by
// `sandbox.ro_binds`). Without CLIENTS_SMOKE_URL the test is skipped.
import assert from "node:assert/strict";
import { test } from "node:test";

import { createAcsClient, followEvents, followTurn, isTurnEnd, unwrap, waitForTurn, type StreamEvent } from "../src/index.js";

const baseUrl = process.env["CLIENTS_SMOKE_URL"];
const agentPath = process.env["CLIENTS_SMOKE_AGENT"] ?? "/opt/acs/bin/scripted-agent";

test("a first turn through the TypeScript SDK", { skip: baseUrl ? false : "CLIENTS_SMOKE_URL is not set", timeout: 120_000 }, async () => {
  const base = baseUrl as string;
  // Register and sign in: login answers a full-scope key.
  const anon = createAcsClient({ baseUrl: base });
  const email = `ts-smoke-${Date.now()}@example.com`;
  const password = "correct horse battery";
  unwrap(await anon.POST("/api/auth/register", { body: { email, password } }));
  const apiKey = unwrap(await anon.POST("/api/auth/login", { body: { email, password } })).data.api_key;

  // The first stream connection is cut 400 bytes in (mid-frame, most likely): the follower
  // must reconnect with Last-Event-ID and lose or repeat nothing.
  let drops = 0;
  const droppingFetch = async (request: Request): Promise<Response> => {
    const res = await fetch(request);
    if (drops > 0 || !new URL(request.url).pathname.endsWith("/stream") || !res.body || !res.ok) return res;
    drops += 1;
    return new Response(cutAfter(res.body, 400), { status: res.status, headers: res.headers });
  };
  const acs = createAcsClient({ baseUrl: base, apiKey, fetch: droppingFetch });

  const agent = unwrap(
    await acs.POST("/api/agents", { body: { name: "ts-smoke", runtime: "acp", command: [agentPath] } }),
  ).data;
  const prompt = [
    "say: hello from typescript",
    "sleep: 800",
    "write: /workspace/ts-smoke.txt written by the scripted agent",
    "say: done",
  ].join("\n");
  const created = await acs.POST("/api/conversations", {
    body: { agent_id: agent.id, prompt, client_request_id: "ts-smoke-1" },
  });
  assert.equal(created.response.status, 201);
  const conversation = unwrap(created).data;
  // 202 would be a queued sandbox request (`queue: true` at a ceiling), not a conversation.
  assert.ok("runtime" in conversation, "a conversation");
  const sandboxId = conversation.sandbox_id;
  assert.ok(sandboxId, "the conversation has a sandbox");

  try {
    // Follow the turn's events over SSE until its closing event.
    const events: StreamEvent[] = [];
    let reconnects = 0;
    for await (const e of followTurn(acs, conversation.id, {
      clientRequestId: "ts-smoke-1",
      retryMs: 100,
      onReconnect: () => void (reconnects += 1),
    })) {
      events.push(e);
    }
    assert.equal(drops, 1, "the first stream connection was cut");
    assert.ok(reconnects >= 1, "the follower reconnected");
    const end = events.at(-1);
    assert.ok(end && isTurnEnd(end) && end.type === "event", "the last event closes the turn");
    assert.equal(end.data.state, "done");
    const turnId = end.data.turn_id;
    const text = events.flatMap((e) => (e.type === "event" && e.data.kind === "output" ? [e.data.data] : [])).join("");
    assert.match(text, /hello from typescript/);
    assert.match(text, /done/);

    // Nothing lost or repeated across the drop: the same ids as the log, in order.
    const log = unwrap(
      await acs.GET("/api/conversations/{id}/events", { params: { path: { id: conversation.id }, query: { limit: 5000 } } }),
    ).data;
    const logged = log.filter((e) => e.turn_id === turnId).map((e) => e.id);
    assert.deepEqual(
      events.map((e) => e.id),
      logged,
    );

    // The turn is done by the turns list too.
    const turn = await waitForTurn(acs, conversation.id, { clientRequestId: "ts-smoke-1", timeoutMs: 30_000 });
    assert.equal(turn.id, turnId);
    assert.equal(turn.status, "done");

    // The account-wide stream carries the same closing event.
    for await (const e of followEvents(acs)) {
      if (isTurnEnd(e) && e.type === "event" && e.data.conversation_id === conversation.id) {
        assert.equal(e.id, end.id);
        break;
      }
    }

    // The file the agent wrote, read from the sandbox.
    const file = unwrap(
      await acs.GET("/api/sandboxes/{id}/files", {
        params: { path: { id: sandboxId }, query: { path: "/workspace/ts-smoke.txt" } },
      }),
    ).data;
    assert.equal(file.encoding, "utf-8");
    assert.equal(file.content, "written by the scripted agent");
  } finally {
    // Ends the conversation, which reclaims its ephemeral machine.
    await acs.POST("/api/conversations/{id}/terminate", { params: { path: { id: conversation.id } } });
  }
});

/** `body`, erroring like a dropped connection once `bytes` bytes went through. */
function cutAfter(body: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      if (sent + value.length < bytes) {
        sent += value.length;
        return controller.enqueue(value);
      }
      controller.enqueue(value.slice(0, bytes - sent));
      await reader.cancel();
      controller.error(new TypeError("connection dropped (test)"));
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
