// Hand-written: following acs's three SSE streams. A generator hands the
// `text/event-stream` body back raw; this parses its frames and reconnects
// after a drop with `Last-Event-ID`, so each event arrives once.
//
//   GET /api/conversations/{id}/stream   followConversation(acs, id)
//   GET /api/events/stream               followEvents(acs)
//   GET /api/team/stream                 followTeam(acs)
//
// Frames: `id: <event id>` + `data: <StreamLogEvent JSON>`; signal frames carry
// an `event:` name and no id; lines starting with `:` keep the connection alive.
import { AcsError, type AcsClient } from "./index.js";
import type { components } from "./schema.js";

export type StreamLogEvent = components["schemas"]["StreamLogEvent"];

/** What a stream yields: a log event (with its id), or a signal frame (named, no id). */
export type StreamEvent =
  | { type: "event"; id: number; event: string; data: StreamLogEvent }
  | { type: "signal"; id?: undefined; event: string; data: unknown };

export interface FollowOptions {
  /** Start after this event id (default: the start of the log). */
  lastEventId?: number | string;
  /** Ask for `blocks` (structured content) on each frame. */
  blocks?: boolean;
  /** Stops following: the generator returns. */
  signal?: AbortSignal;
  /** Pause before reconnecting, in ms (default 1000); a `retry:` field from the server replaces it. */
  retryMs?: number;
  /** Reconnects in a row without a frame in between before giving up (default 10). */
  maxRetries?: number;
  /** A connection silent this long (no frame, no keep-alive comment) counts as dropped (default 45000 ms; the server sends a comment every 15 s). */
  idleTimeoutMs?: number;
  /** Called before each reconnect, with the id it resumes after. */
  onReconnect?: (info: { lastEventId: number | undefined; attempt: number; error: unknown }) => void;
}

type Opened = { data?: ReadableStream<Uint8Array> | null; error?: unknown; response: Response };
type Opener = (header: { "Last-Event-ID"?: string }, signal: AbortSignal) => Promise<Opened>;

const SSE_HEADERS = { Accept: "text/event-stream" };

/** A conversation's events (`GET /api/conversations/{id}/stream`): the log from the start (or after `lastEventId`), then live. */
export function followConversation(
  client: AcsClient,
  conversationId: string,
  options: FollowOptions = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  const query = options.blocks === undefined ? {} : { blocks: options.blocks };
  return follow(
    (header, signal) =>
      client.GET("/api/conversations/{id}/stream", {
        params: { path: { id: conversationId }, query, header },
        headers: SSE_HEADERS,
        parseAs: "stream",
        signal,
      }),
    options,
  );
}

/** Every conversation of the account (`GET /api/events/stream`), with `conversations` signal frames. */
export function followEvents(client: AcsClient, options: FollowOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
  const query = options.blocks === undefined ? {} : { blocks: options.blocks };
  return follow(
    (header, signal) =>
      client.GET("/api/events/stream", { params: { query, header }, headers: SSE_HEADERS, parseAs: "stream", signal }),
    options,
  );
}

/** The teammates' conversations (`GET /api/team/stream`), with `team` and `schedule` signal frames. */
export function followTeam(client: AcsClient, options: FollowOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
  const query = options.blocks === undefined ? {} : { blocks: options.blocks };
  return follow(
    (header, signal) =>
      client.GET("/api/team/stream", { params: { query, header }, headers: SSE_HEADERS, parseAs: "stream", signal }),
    options,
  );
}

/**
 * Follows one stream: opens it, yields its frames, and after a drop (an error, the server
 * closing it, a silent connection, a 429 or 5xx) opens it again after the last event seen.
 * Other answers (401, 403, 404, 422) throw `AcsError`. Breaking out of the loop closes the
 * connection.
 */
export async function* follow(open: Opener, options: FollowOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
  const { signal } = options;
  let last = options.lastEventId === undefined ? undefined : Number(options.lastEventId);
  let retryMs = options.retryMs ?? 1000;
  const maxRetries = options.maxRetries ?? 10;
  const idleMs = options.idleTimeoutMs ?? 45_000;
  let failures = 0;
  for (;;) {
    if (signal?.aborted) return;
    const conn = new AbortController();
    const stop = () => conn.abort(signal?.reason);
    signal?.addEventListener("abort", stop, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => conn.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
    };
    let error: unknown = new Error("the server closed the stream");
    let retryAfterMs = 0;
    try {
      arm();
      const res = await open(last === undefined ? {} : { "Last-Event-ID": String(last) }, conn.signal);
      if (!res.response.ok || !res.data) {
        const status = res.response.status;
        if (status !== 429 && status < 500) throw new AcsError(status, res.error);
        error = new AcsError(status, res.error);
        const after = Number(res.response.headers.get("Retry-After"));
        if (after > 0) retryAfterMs = after * 1000;
      } else {
        const parser = new SseParser();
        const decoder = new TextDecoder();
        const reader = res.data.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            arm();
            for (const frame of parser.push(decoder.decode(value, { stream: true }))) {
              failures = 0;
              const event = toEvent(frame);
              if (event.type === "event") last = event.id;
              yield event;
            }
            if (parser.retry !== undefined) retryMs = parser.retry;
          }
        } finally {
          reader.releaseLock();
        }
      }
    } catch (e) {
      if (e instanceof AcsError) throw e;
      if (signal?.aborted) return;
      error = e;
    } finally {
      clearTimeout(idle);
      signal?.removeEventListener("abort", stop);
      conn.abort();
    }
    failures += 1;
    if (failures > maxRetries) {
      throw new Error(`stream dropped ${failures} times in a row`, { cause: error });
    }
    options.onReconnect?.({ lastEventId: last, attempt: failures, error });
    if (!(await pause(Math.max(retryMs, retryAfterMs), signal))) return;
  }
}

function toEvent(frame: SseFrame): StreamEvent {
  let data: unknown = frame.data;
  try {
    data = JSON.parse(frame.data);
  } catch {
    // acs sends JSON; anything else is passed on as text.
  }
  if (frame.id !== undefined && /^\d+$/.test(frame.id)) {
    return { type: "event", id: Number(frame.id), event: frame.event, data: data as StreamLogEvent };
  }
  return { type: "signal", event: frame.event, data };
}

/** Waits `ms`; false when `signal` aborted first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** One dispatched frame of an SSE stream. */
export interface SseFrame {
  /** Its own `id:` field, if it had one. */
  id?: string;
  /** Its `event:` name, `message` without one. */
  event: string;
  /** Its `data:` lines joined with newlines. */
  data: string;
}

/**
 * The `text/event-stream` format (the WHATWG HTML standard's parsing rules): feed it decoded
 * text as it arrives, in pieces of any size; it returns the frames each piece completes.
 * Comment lines (`:`) and frames without data are skipped; a frame cut off by a drop is
 * never returned.
 */
export class SseParser {
  /** The last `retry:` value, in ms. */
  retry: number | undefined;
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | undefined;

  push(text: string): SseFrame[] {
    this.buffer += text;
    const frames: SseFrame[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone `\r` at the end may be the first half of `\r\n`: wait for more.
      if (!m || (m[0] === "\r" && m.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  private line(line: string): SseFrame | undefined {
    if (line === "") {
      const frame =
        this.data.length > 0
          ? { ...(this.id === undefined ? {} : { id: this.id }), event: this.event || "message", data: this.data.join("\n") }
          : undefined;
      this.data = [];
      this.event = "";
      this.id = undefined;
      return frame;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
    return undefined;
  }
}
