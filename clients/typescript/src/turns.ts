// Hand-written: waiting for a turn to end, by polling its list or by
// watching the conversation's stream.
import { AcsError, type AcsClient } from "./index.js";
import type { components } from "./schema.js";
import { followConversation, type FollowOptions, type StreamEvent } from "./stream.js";

export type Turn = components["schemas"]["Turn"];

/** Which turn: by id, by the `client_request_id` sent with its prompt, or (neither) the latest. */
export interface TurnSelector {
  turnId?: string;
  clientRequestId?: string;
}

export interface WaitOptions extends TurnSelector {
  /** Give up after this long (default 120000 ms). */
  timeoutMs?: number;
  /** Pause between two looks (default 250 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
}

/**
 * Polls `GET /api/conversations/{id}/turns` until the chosen turn exists and is no longer
 * `running`; returns it (`status` `done`, `failed` or `interrupted`). Throws on timeout.
 */
export async function waitForTurn(client: AcsClient, conversationId: string, options: WaitOptions = {}): Promise<Turn> {
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    const res = await client.GET("/api/conversations/{id}/turns", {
      params: { path: { id: conversationId } },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (res.error !== undefined || !res.data) {
      if (res.response.status !== 429) throw new AcsError(res.response.status, res.error);
    } else {
      const turn = pick(res.data.data, options);
      if (turn && turn.status !== "running") return turn;
    }
    if (Date.now() > deadline) {
      throw new Error(`turn of conversation ${conversationId} did not end within ${options.timeoutMs ?? 120_000} ms`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 250));
    options.signal?.throwIfAborted();
  }
}

function pick(turns: Turn[], sel: TurnSelector): Turn | undefined {
  if (sel.turnId !== undefined) return turns.find((t) => t.id === sel.turnId);
  if (sel.clientRequestId !== undefined) return turns.findLast((t) => t.client_request_id === sel.clientRequestId);
  return turns.at(-1);
}

/** Whether `e` is the `turn` stage event that ends a turn (state `done`, `failed` or `interrupted`). */
export function isTurnEnd(e: StreamEvent): boolean {
  return e.type === "event" && e.data.kind === "stage" && e.data.stage === "turn" && e.data.state !== "started";
}

/**
 * Follows the conversation's stream (from the start, or after `lastEventId`) and yields the
 * events of one turn, its closing `turn` stage event last; then returns. The turn is chosen by
 * `turnId` or `clientRequestId`, else it is the first turn that starts on the stream.
 */
export async function* followTurn(
  client: AcsClient,
  conversationId: string,
  options: FollowOptions & TurnSelector = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  let turnId = options.turnId;
  for await (const e of followConversation(client, conversationId, options)) {
    if (e.type !== "event") continue;
    if (turnId === undefined && e.data.kind === "stage" && e.data.stage === "turn" && e.data.state === "started") {
      const started = parseStageData(e.data.data);
      if (options.clientRequestId === undefined || started["client_request_id"] === options.clientRequestId) {
        turnId = e.data.turn_id ?? undefined;
      }
    }
    if (turnId === undefined || e.data.turn_id !== turnId) continue;
    yield e;
    if (isTurnEnd(e)) return;
  }
}

/** A stage event's `data`: JSON-encoded metadata (an object), `{}` when it is not one. */
export function parseStageData(data: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(data);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
