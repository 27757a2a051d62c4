// The SSE parser and the reconnecting follower, without a server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { AcsError, follow, SseParser, type SseFrame, type StreamEvent } from "../src/index.js";

function feed(text: string, size: number): SseFrame[] {
  const p = new SseParser();
  const frames: SseFrame[] = [];
  for (let i = 0; i < text.length; i += size) frames.push(...p.push(text.slice(i, i + size)));
  return frames;
}

const STREAM =
  ": keep-alive\n\n" +
  'id: 7\ndata: {"kind":"stage"}\n\n' +
  'event: conversations\r\ndata: {"reason": "changed"}\r\n\r\n' +
  'retry: 250\rid: 8\rdata: {"a":\r\ndata: 1}\r\r' +
  "id: 9\ndata: cut off by a drop";

test("frames in pieces of any size", () => {
  const want: SseFrame[] = [
    { id: "7", event: "message", data: '{"kind":"stage"}' },
    { event: "conversations", data: '{"reason": "changed"}' },
    { id: "8", event: "message", data: '{"a":\n1}' },
  ];
  for (const size of [1, 2, 3, 7, 64, STREAM.length]) assert.deepEqual(feed(STREAM, size), want, `pieces of ${size}`);
});

test("retry and bare fields", () => {
  const p = new SseParser();
  assert.deepEqual(p.push("retry: 250\nretry: x\nid\ndata\n\n"), [{ id: "", event: "message", data: "" }]);
  assert.equal(p.retry, 250);
});

test("follow resumes after drops with Last-Event-ID and stops on a refusal", async () => {
  const enc = new TextEncoder();
  // Hands out `parts` one read at a time, then ends or errors like a dropped connection.
  const body = (parts: string[], fail: boolean) => {
    const left = [...parts];
    return new ReadableStream<Uint8Array>({
      pull(c) {
        const p = left.shift();
        if (p !== undefined) c.enqueue(enc.encode(p));
        else if (fail) c.error(new TypeError("dropped"));
        else c.close();
      },
    });
  };
  const sent: (string | undefined)[] = [];
  const answers = [
    () => new Response(body(['id: 1\ndata: {"n":1}\n\n', 'id: 2\ndata: {"n"'], true)),
    () => new Response('{"error":"unavailable"}', { status: 503, headers: { "Retry-After": "0" } }),
    () => new Response(body(['id: 2\ndata: {"n":2}\n\nevent: conversations\ndata: {"reason":"changed"}\n\n'], false)),
    () => new Response('{"error":"not_found","message":"no such conversation"}', { status: 404 }),
  ];
  const open = async (header: { "Last-Event-ID"?: string }) => {
    sent.push(header["Last-Event-ID"]);
    const response = answers[sent.length - 1]!();
    return response.ok ? { data: response.body, response } : { error: await response.json(), response };
  };
  const got: StreamEvent[] = [];
  let reconnects = 0;
  await assert.rejects(
    async () => {
      for await (const e of follow(open, { retryMs: 1, onReconnect: () => void (reconnects += 1) })) got.push(e);
    },
    (e: unknown) => e instanceof AcsError && e.status === 404,
  );
  assert.deepEqual(sent, [undefined, "1", "1", "2"]);
  assert.equal(reconnects, 3);
  assert.deepEqual(
    got.map((e) => [e.type, e.id, e.event]),
    [
      ["event", 1, "message"],
      ["event", 2, "message"],
      ["signal", undefined, "conversations"],
    ],
  );
});
