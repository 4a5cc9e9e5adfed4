/** A JSON-RPC error object as an upstream sent it. */
export interface RpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** One answer of an upstream, checked: an id and exactly one of `result` and `error`. */
export type RpcAnswer =
  | { readonly id: unknown; readonly result: unknown }
  | { readonly id: unknown; readonly error: RpcErrorObject };

/** Codes and phrases by which providers say "too many requests" inside a JSON-RPC answer. */
const RATE_LIMIT_CODE = -32005;
const RATE_LIMIT_PHRASE = /rate limit|too many requests/i;

/**
 * Checks one answer envelope; a string says what is wrong with it. `error` must be an object
 * with an integer `code` and a string `message`.
 */
export function parseAnswer(value: unknown): RpcAnswer | string {
  if (!isObject(value)) return "answer is not a JSON-RPC object";
  if (value.jsonrpc !== "2.0") return `answer has jsonrpc ${describe(value.jsonrpc)}, not "2.0"`;
  const hasResult = "result" in value;
  const hasError = "error" in value;
  if (hasResult && hasError) return "answer has both result and error";
  if (hasResult) return { id: value.id, result: value.result };
  if (!hasError) return "answer has neither result nor error";
  const error = value.error;
  if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== "string") {
    return "answer has an error that is not {code, message}";
  }
  const parsed: RpcErrorObject =
    "data" in error
      ? { code: error.code as number, message: error.message, data: error.data }
      : { code: error.code as number, message: error.message };
  return { id: value.id, error: parsed };
}

/** Whether a JSON-RPC error means "slow down" rather than a wrong call. */
export function isRateLimitError(error: RpcErrorObject): boolean {
  return error.code === RATE_LIMIT_CODE || RATE_LIMIT_PHRASE.test(error.message);
}

/** A JSON-RPC error answering a whole batch (the way some providers refuse batches). */
export function isErrorEnvelope(value: unknown): value is { error: RpcErrorObject } {
  const answer = parseAnswer(value);
  return typeof answer !== "string" && "error" in answer;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A short, bounded rendering of an upstream value for an error message. */
export function describe(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
