import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
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

/**
 * Keep-alive agents shared by every upstream client of the process: an upstream is asked many
 * small questions, and a connection per question would cost more than the answers.
 */
const agents = {
  "http:": new HttpAgent({ keepAlive: true, maxSockets: 32 }),
  "https:": new HttpsAgent({ keepAlive: true, maxSockets: 32 }),
} as const;

/**
 * POSTs a JSON body and reads the answer within the limits; never throws. Over `node:http`
 * (not `fetch`, whose machinery costs about a millisecond of CPU an exchange, more than the
 * rest of a fork's read). Redirects are not followed: a 3xx is an answer of that status.
 */
export function postJson(
  endpoint: Endpoint,
  body: string,
  limits: PostLimits,
): Promise<PostOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: PostOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      limits.closed.removeEventListener("abort", onClose);
      resolve(outcome);
    };
    const url = new URL(endpoint.href);
    const secure = url.protocol === "https:";
    const payload = Buffer.from(body, "utf8");
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      accept: "application/json",
      "content-length": payload.length,
    };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      { method: "POST", headers, agent: secure ? agents["https:"] : agents["http:"] },
      (res) => {
        const declared = Number(res.headers["content-length"] ?? Number.NaN);
        const tooLarge = `answer larger than ${limits.maxBytes} bytes`;
        if (declared > limits.maxBytes) {
          settle({ kind: "failed", reason: tooLarge });
          res.destroy();
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > limits.maxBytes) {
            settle({ kind: "failed", reason: tooLarge });
            res.destroy();
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on("end", () => {
          const retryAfter = res.headers["retry-after"];
          settle({
            kind: "answer",
            status: res.statusCode ?? 0,
            retryAfter: typeof retryAfter === "string" ? retryAfter : null,
            body: Buffer.concat(chunks, size).toString("utf8"),
          });
        });
        res.on("error", (err) => settle({ kind: "failed", reason: transportReason(err) }));
        res.on("aborted", () =>
          settle({ kind: "failed", reason: "connection failed (the answer was cut short)" }),
        );
      },
    );
    const timer = setTimeout(() => {
      settle({
        kind: "failed",
        reason: `no answer within ${limits.timeoutMs} ms`,
        timedOut: true,
      });
      req.destroy();
    }, limits.timeoutMs);
    const onClose = (): void => {
      settle({ kind: "failed", reason: "client closed" });
      req.destroy();
    };
    if (limits.closed.aborted) {
      onClose();
      return;
    }
    limits.closed.addEventListener("abort", onClose, { once: true });
    req.on("error", (err) => settle({ kind: "failed", reason: transportReason(err) }));
    req.end(payload);
  });
}

/** The failure's code (`ECONNREFUSED`, `ECONNRESET`, a TLS error's) or its message. */
function transportReason(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") return `connection failed (${code})`;
  return `connection failed (${err instanceof Error ? err.message : String(err)})`;
}
