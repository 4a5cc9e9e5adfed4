import type { Endpoint } from "./endpoint.js";

/** What one HTTP exchange with an upstream gave: a whole answer, or why there is none. */
export type PostOutcome =
  | {
      readonly kind: "answer";
      readonly status: number;
      /** The `Retry-After` header, as sent. */
      readonly retryAfter: string | null;
      readonly body: string;
    }
  | {
      readonly kind: "failed";
      readonly reason: string;
      /** No answer came within the time limit (rather than a refused or broken connection). */
      readonly timedOut?: boolean;
    };

export interface PostLimits {
  /** The whole exchange (connection, headers and body) is abandoned after this long. */
  readonly timeoutMs: number;
  /** An answer body larger than this is abandoned as it arrives. */
  readonly maxBytes: number;
  /** Aborts the exchange when the client closes. */
  readonly closed: AbortSignal;
}

/** POSTs a JSON body and reads the answer within the limits; never throws. */
export async function postJson(
  endpoint: Endpoint,
  body: string,
  limits: PostLimits,
): Promise<PostOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, limits.timeoutMs);
  const onClose = (): void => controller.abort();
  limits.closed.addEventListener("abort", onClose, { once: true });
  try {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
    };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    const response = await fetch(endpoint.href, {
      method: "POST",
      headers,
      body,
      signal: controller.signal,
      redirect: "error",
    });
    const text = await readCapped(response, limits.maxBytes);
    if (typeof text !== "string") return text;
    return {
      kind: "answer",
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      body: text,
    };
  } catch (err) {
    if (timedOut)
      return { kind: "failed", reason: `no answer within ${limits.timeoutMs} ms`, timedOut: true };
    if (limits.closed.aborted) return { kind: "failed", reason: "client closed" };
    return { kind: "failed", reason: transportReason(err) };
  } finally {
    clearTimeout(timer);
    limits.closed.removeEventListener("abort", onClose);
  }
}

/** The body as text, or a failure once it is known to be over `maxBytes`. */
async function readCapped(
  response: Response,
  maxBytes: number,
): Promise<string | { kind: "failed"; reason: string }> {
  const tooLarge = { kind: "failed", reason: `answer larger than ${maxBytes} bytes` } as const;
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    return tooLarge;
  }
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return tooLarge;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** `fetch failed` says nothing: the cause (`ECONNREFUSED`, `ECONNRESET`, a TLS error) does. */
function transportReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === "string") return `connection failed (${cause.code})`;
  if (typeof cause?.message === "string") return `connection failed (${cause.message})`;
  return `connection failed (${err instanceof Error ? err.message : String(err)})`;
}
