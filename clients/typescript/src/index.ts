// Hand-written (scripts/clients generate never touches this file): a client
// for acs configured with a base URL and an API key. Every operation is
// called by path through openapi-fetch, typed by the generated `schema.ts`:
//
//   const acs = createAcsClient({ baseUrl: "http://127.0.0.1:8080", apiKey });
//   const { data, error } = await acs.GET("/api/agents");
//
// `stream.ts` follows the SSE streams; `turns.ts` waits for a turn to end.
import createClient, { type Client, type ClientOptions, type Middleware } from "openapi-fetch";

import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
/** The document's named schemas: `Schemas["Conversation"]`, `Schemas["Turn"]`, ... */
export type Schemas = components["schemas"];
export type AcsClient = Client<paths>;

export interface AcsClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where the server listens, without `/api` (the paths carry it): `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An API key (`POST /api/auth/login` answers one as `data.api_key`), sent as `Authorization: Bearer`. */
  apiKey?: string;
}

/** An openapi-fetch client for acs. Without `apiKey` only the public operations answer (register, login, health). */
export function createAcsClient(options: AcsClientOptions): AcsClient {
  const { baseUrl, apiKey, ...rest } = options;
  const client = createClient<paths>({ ...rest, baseUrl: baseUrl.replace(/\/+$/, "") });
  if (apiKey !== undefined) {
    client.use(bearer(apiKey));
  }
  return client;
}

/** Middleware that adds `Authorization: Bearer <key>` to requests that have no `Authorization` yet. */
export function bearer(apiKey: string): Middleware {
  return {
    onRequest({ request }) {
      if (!request.headers.has("Authorization")) {
        request.headers.set("Authorization", `Bearer ${apiKey}`);
      }
      return request;
    },
  };
}

/** The error an operation answered (`Error` body: `error` code, `message`), thrown by `unwrap`. */
export class AcsError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    const b = body as { error?: unknown; message?: unknown } | null | undefined;
    const code = typeof b?.error === "string" ? b.error : "";
    const message = typeof b?.message === "string" ? b.message : "";
    super(`acs answered ${status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}`);
    this.name = "AcsError";
    this.status = status;
    this.body = body;
  }
}

/**
 * The `data` of an openapi-fetch result, or an `AcsError` with the answer's status and body:
 * `const agent = unwrap(await acs.POST("/api/agents", { body })).data;`
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    throw new AcsError(result.response.status, result.error);
  }
  return result.data as T;
}

export * from "./stream.js";
export * from "./turns.js";
