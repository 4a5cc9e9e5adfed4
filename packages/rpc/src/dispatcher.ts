import type { Logger } from "@nodex/types";
import { LIMIT_EXCEEDED_CODE } from "./access.js";
import { isUnexpectedError, RPCError, RPCErrorCode, toRPCError } from "./errors.js";
import { type ForkHistory, Forwarded, routeForkHistory } from "./forkHistory.js";
import { countArrayMembers } from "./json.js";
import { type MethodClass, methodClass } from "./methodClass.js";
import type { RequestMetrics } from "./metrics.js";
import { decodeParams } from "./params.js";
import { type MethodRegistry, OTHER_METHOD, type RegisteredMethod } from "./registry.js";
import { RawJson } from "./results.js";
import type { CallContext, RPCServices } from "./services.js";

export type RequestId = string | number | null;

export interface DispatcherOptions {
  readonly maxBatchSize: number;
  readonly maxResponseBytes: number;
  /** Time limit of one dispatch in milliseconds; 0 means none. */
  readonly timeoutMs: number;
  /** Time budgets of method classes, in milliseconds, within `timeoutMs`. */
  readonly budgets?: Partial<Record<MethodClass, number>>;
}

const CLASS_NAMES: Readonly<Record<MethodClass, string>> = {
  call: "calls",
  logs: "log queries",
  trace: "traces",
};

export interface DispatcherDeps {
  readonly registry: MethodRegistry;
  readonly services: RPCServices;
  readonly logger: Logger;
  /** Told of every call answered, when the node keeps metrics. */
  readonly metrics?: RequestMetrics;
  /** On a forked chain: the upstream, which answers for the blocks up to the fork block. */
  readonly history?: ForkHistory;
}

/**
 * What one dispatch did, for the access log: the method label of each call (unknown names
 * folded to `other`, as in the metrics) and the JSON-RPC error codes answered, in order.
 */
export interface DispatchNotes {
  readonly methods: string[];
  readonly codes: number[];
}

/** A call being measured: its method label, when it began, what to tell. */
interface Observation {
  readonly method: string;
  readonly start: number;
  readonly keyId: string | undefined;
  readonly notes: DispatchNotes | undefined;
}

interface ValidCall {
  readonly id: RequestId;
  readonly notification: boolean;
  readonly method: string;
  readonly params: readonly unknown[];
}

const EMPTY_PARAMS: readonly unknown[] = Object.freeze([]);

/**
 * Decides per member of a request whether its method runs (a hosted node's key lists and
 * limits): `undefined` runs it, an error answers it instead.
 */
export interface CallGuard {
  admit(method: RegisteredMethod): RPCError | undefined;
}

/** Serialized responses: `undefined` means nothing is sent back (notifications only). */
export type DispatchOutput = string | undefined;
/**
 * A serialized response as text or as its UTF-8 bytes (an answer built from a result that came
 * as bytes, such as `eth_getLogs`'): what a transport that writes bytes takes.
 */
export type WireOutput = string | Uint8Array | undefined;

/**
 * The JSON-RPC 2.0 envelope: parses a body, validates each request, runs the methods and
 * serializes the responses. Knows nothing of HTTP.
 */
export class Dispatcher {
  readonly #opts: DispatcherOptions;
  readonly #deps: DispatcherDeps;
  readonly #log: Logger;
  readonly #debug: boolean;
  readonly #metrics: RequestMetrics | undefined;

  constructor(opts: DispatcherOptions, deps: DispatcherDeps) {
    this.#opts = opts;
    this.#deps = deps;
    this.#log = deps.logger;
    this.#debug = deps.logger.isLevelEnabled("debug");
    this.#metrics = deps.metrics;
  }

  /**
   * Answers one HTTP body. Synchronous when every method in it is (most are), so the HTTP
   * layer can write the answer without waiting for another turn of the event loop.
   */
  dispatch(
    body: string,
    ctx: CallContext,
    guard?: CallGuard,
    notes?: DispatchNotes,
  ): DispatchOutput | Promise<DispatchOutput> {
    const out = this.dispatchWire(body, ctx, guard, notes);
    return out instanceof Promise ? out.then(asText) : asText(out);
  }

  /**
   * `dispatch`, with a large answer left as bytes when its result came as bytes: a transport
   * that writes bytes spares itself decoding them into a string only to encode it again.
   */
  dispatchWire(
    body: string,
    ctx: CallContext,
    guard?: CallGuard,
    notes?: DispatchNotes,
  ): WireOutput | Promise<WireOutput> {
    const writing = this.#deps.services.chain.writing?.();
    if (writing !== undefined) return writing.then(() => this.#dispatch(body, ctx, guard, notes));
    return this.#dispatch(body, ctx, guard, notes);
  }

  #dispatch(
    body: string,
    ctx: CallContext,
    guard: CallGuard | undefined,
    notes: DispatchNotes | undefined,
  ): WireOutput | Promise<WireOutput> {
    // A batch over the limit is refused before it is parsed: counting its members is a scan,
    // parsing builds every one of them. `[0,0]` is the shortest form of two members, so only a
    // body of more than twice the limit can hold too many.
    const max = this.#opts.maxBatchSize;
    if (body.length > 2 * max + 1) {
      const members = countArrayMembers(body);
      if (members !== undefined && members > max) {
        this.#whole(ctx, notes, RPCErrorCode.INVALID_REQUEST);
        return batchTooLarge(members, max);
      }
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      this.#whole(ctx, notes, RPCErrorCode.PARSE_ERROR);
      return errorResponse(
        null,
        new RPCError(RPCErrorCode.PARSE_ERROR, "parse error: body is not valid JSON"),
      );
    }
    const deadline = this.#opts.timeoutMs > 0 ? Date.now() + this.#opts.timeoutMs : 0;
    if (!Array.isArray(parsed)) {
      const out = this.#handleOne(parsed, ctx, deadline, guard, notes);
      return out instanceof Promise
        ? out.then((o) => this.#limitSingle(parsed, o, ctx, notes))
        : this.#limitSingle(parsed, out, ctx, notes);
    }
    if (parsed.length === 0) {
      this.#whole(ctx, notes, RPCErrorCode.INVALID_REQUEST);
      return errorResponse(
        null,
        new RPCError(RPCErrorCode.INVALID_REQUEST, "invalid request: empty batch"),
      );
    }
    if (parsed.length > max) {
      this.#whole(ctx, notes, RPCErrorCode.INVALID_REQUEST);
      return batchTooLarge(parsed.length, max);
    }
    const outs = parsed.map((req) => this.#handleOne(req, ctx, deadline, guard, notes));
    return outs.some((out) => out instanceof Promise)
      ? Promise.all(outs).then((done) => this.#joinBatch(parsed, done, ctx, notes))
      : this.#joinBatch(parsed, outs as WireOutput[], ctx, notes);
  }

  #limitSingle(
    req: unknown,
    out: WireOutput,
    ctx: CallContext,
    notes: DispatchNotes | undefined,
  ): WireOutput {
    const limit = this.#opts.maxResponseBytes;
    if (out !== undefined && out.length > limit / 3 && byteLength(out) > limit) {
      this.#tooLargeTold(req, out, ctx, notes);
      return errorResponse(idOf(req), this.#responseTooLarge());
    }
    return out;
  }

  /**
   * An answer replaced by -32011 for its size: the call was told as what it answered; it is
   * told again as what the client gets.
   */
  #tooLargeTold(
    req: unknown,
    out: string | Uint8Array,
    ctx: CallContext,
    notes: DispatchNotes | undefined,
  ): void {
    if (this.#metrics === undefined && notes === undefined) return;
    const call = validateRequest(req);
    const method =
      call instanceof RPCError ? OTHER_METHOD : this.#deps.registry.labelOf(call.method);
    // An answer as bytes is a result (errors are built as text).
    const was = typeof out === "string" ? answeredCode(out) : 0;
    this.#metrics?.recount?.(method, ctx.keyId, was, RPCErrorCode.LIMIT_EXCEEDED);
    if (notes !== undefined) {
      const at = was === 0 ? -1 : notes.codes.indexOf(was);
      if (at === -1) notes.codes.push(RPCErrorCode.LIMIT_EXCEEDED);
      else notes.codes[at] = RPCErrorCode.LIMIT_EXCEEDED;
    }
  }

  /** Batch answers in request order; members past the response size limit get -32011. */
  #joinBatch(
    reqs: readonly unknown[],
    outs: readonly WireOutput[],
    ctx: CallContext,
    notes: DispatchNotes | undefined,
  ): WireOutput {
    const parts: (string | Uint8Array)[] = [];
    let chars = 2;
    for (const out of outs) if (out !== undefined) chars += out.length + 1;
    // A string's UTF-8 form is at most 3 bytes per UTF-16 unit: count bytes only near the limit.
    if (chars * 3 <= this.#opts.maxResponseBytes) {
      for (const out of outs) if (out !== undefined) parts.push(out);
      return joinParts(parts);
    }
    let size = 2;
    for (let i = 0; i < outs.length; i++) {
      let out = outs[i];
      if (out === undefined) continue;
      size += byteLength(out) + 1;
      if (size > this.#opts.maxResponseBytes) {
        this.#tooLargeTold(reqs[i], out, ctx, notes);
        out = errorResponse(idOf(reqs[i]), this.#responseTooLarge());
      }
      parts.push(out);
    }
    return joinParts(parts);
  }

  /** One request's serialized response; a promise only when its handler is asynchronous. */
  #handleOne(
    req: unknown,
    ctx: CallContext,
    deadline: number,
    guard: CallGuard | undefined,
    notes: DispatchNotes | undefined,
  ): WireOutput | Promise<WireOutput> {
    const measured = this.#metrics !== undefined || notes !== undefined;
    const start = measured ? performance.now() : 0;
    const call = validateRequest(req);
    if (call instanceof RPCError) {
      if (measured) this.#told({ method: OTHER_METHOD, start, keyId: ctx.keyId, notes }, call.code);
      return errorResponse(idOf(req), call);
    }
    const found = this.#deps.registry.lookup(call.method);
    if (this.#debug) this.#log.debug("RPC call", { method: call.method, id: call.id });
    const seen: Observation | undefined = measured
      ? {
          method: found instanceof RPCError ? this.#deps.registry.labelOf(call.method) : found.name,
          start,
          keyId: ctx.keyId,
          notes,
        }
      : undefined;
    if (found instanceof RPCError) {
      if (seen !== undefined) this.#told(seen, found.code);
      return call.notification ? undefined : errorResponse(call.id, found);
    }
    const refused = guard === undefined ? found.hostedOff : guard.admit(found);
    if (refused !== undefined) {
      if (seen !== undefined) {
        if (refused.code === LIMIT_EXCEEDED_CODE) {
          // Counted once, as rate-limited, not again as a call of the method.
          this.#metrics?.rateLimited(ctx.keyId, found.name);
          seen.notes?.methods.push(seen.method);
          seen.notes?.codes.push(refused.code);
        } else this.#told(seen, refused.code);
      }
      return call.notification ? undefined : errorResponse(call.id, refused);
    }
    let value: unknown;
    try {
      const decoded = decodeParams(found.spec.params, call.params);
      if (decoded.error !== undefined) {
        if (seen !== undefined) this.#told(seen, RPCErrorCode.INVALID_PARAMS);
        return call.notification
          ? undefined
          : errorResponse(call.id, new RPCError(RPCErrorCode.INVALID_PARAMS, decoded.error));
      }
      const history = this.#deps.history;
      const routed =
        history === undefined
          ? undefined
          : routeForkHistory(history, call.method, call.params, (params) => {
              if (params === call.params)
                return found.spec.handler(this.#deps.services, decoded.value, ctx);
              const again = decodeParams(found.spec.params, params);
              if (again.error !== undefined)
                throw new RPCError(RPCErrorCode.INVALID_PARAMS, again.error);
              return found.spec.handler(this.#deps.services, again.value, ctx);
            });
      value = routed ?? found.spec.handler(this.#deps.services, decoded.value, ctx);
    } catch (err) {
      return this.#failure(call, err, seen);
    }
    if (value instanceof Promise) {
      let until = deadline;
      let limit = "the time limit";
      const budgets = this.#opts.budgets;
      if (budgets !== undefined) {
        const cls = methodClass(call.method);
        const ms = cls === undefined ? undefined : budgets[cls];
        if (cls !== undefined && ms !== undefined && ms > 0) {
          const end = Date.now() + ms;
          if (until === 0 || end < until) {
            until = end;
            limit = `its time budget of ${ms} ms (${CLASS_NAMES[cls]})`;
          }
        }
      }
      return withDeadline(value, until, call.method, limit).then(
        (v) => this.#success(call, found.spec.result, v, seen),
        (err: unknown) => this.#failure(call, err, seen),
      );
    }
    return this.#success(call, found.spec.result, value, seen);
  }

  #success(
    call: ValidCall,
    encode: (value: never) => unknown,
    value: unknown,
    seen: Observation | undefined,
  ): WireOutput {
    if (call.notification) {
      if (seen !== undefined) this.#told(seen, 0);
      return undefined;
    }
    let json: string | Uint8Array;
    let own = false;
    try {
      // An upstream's answer (a fork's history) is written as it came.
      const encoded = value instanceof Forwarded ? (value.result ?? null) : encode(value as never);
      if (encoded instanceof RawJson) {
        json = encoded.text;
        own = encoded.ownBuffer;
      } else json = JSON.stringify(encoded);
    } catch (err) {
      return this.#failure(call, err, seen);
    }
    if (seen !== undefined) this.#told(seen, 0);
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":`;
    return typeof json === "string" ? `${head}${json}}` : withBytes(head, json, own);
  }

  #failure(call: ValidCall, err: unknown, seen: Observation | undefined): DispatchOutput {
    if (isUnexpectedError(err)) {
      this.#log.error("RPC method failed", { method: call.method, err: describe(err) });
    }
    if (call.notification) {
      if (seen !== undefined) this.#told(seen, toRPCError(err).code);
      return undefined;
    }
    const error = toRPCError(err);
    if (seen !== undefined) this.#told(seen, error.code);
    return errorResponse(call.id, error);
  }

  /** A call answered: to the metrics and the notes. */
  #told(seen: Observation, code: number): void {
    this.#metrics?.call(seen.method, seen.keyId, code, (performance.now() - seen.start) / 1000);
    if (seen.notes !== undefined) {
      seen.notes.methods.push(seen.method);
      if (code !== 0) seen.notes.codes.push(code);
    }
  }

  /** A body refused as a whole (not JSON, an empty or oversized batch): one `other` call. */
  #whole(ctx: CallContext, notes: DispatchNotes | undefined, code: number): void {
    if (this.#metrics === undefined && notes === undefined) return;
    this.#told({ method: OTHER_METHOD, start: performance.now(), keyId: ctx.keyId, notes }, code);
  }

  #responseTooLarge(): RPCError {
    return new RPCError(
      RPCErrorCode.LIMIT_EXCEEDED,
      `response size limit of ${this.#opts.maxResponseBytes} bytes exceeded`,
    );
  }
}

function validateRequest(req: unknown): ValidCall | RPCError {
  if (typeof req !== "object" || req === null || Array.isArray(req)) {
    return invalid("expected a request object");
  }
  const obj = req as Record<string, unknown>;
  const hasId = "id" in obj;
  const id = obj.id;
  if (hasId && id !== null && typeof id !== "string" && typeof id !== "number") {
    return invalid("id must be a string, a number or null");
  }
  if (obj.jsonrpc !== "2.0") return invalid('jsonrpc must be "2.0"');
  if (typeof obj.method !== "string") return invalid("method must be a string");
  const params = obj.params;
  if (params !== undefined && !Array.isArray(params)) return invalid("params must be an array");
  return {
    id: hasId ? (id as RequestId) : null,
    notification: !hasId,
    method: obj.method,
    params: params ?? EMPTY_PARAMS,
  };
}

function batchTooLarge(members: number, max: number): string {
  return errorResponse(
    null,
    new RPCError(
      RPCErrorCode.INVALID_REQUEST,
      `invalid request: batch of ${members} requests exceeds the limit of ${max}`,
    ),
  );
}

function invalid(why: string): RPCError {
  return new RPCError(RPCErrorCode.INVALID_REQUEST, `invalid request: ${why}`);
}

/** The id to echo for a request, `null` when it has none or an invalid one. */
function idOf(req: unknown): RequestId {
  if (typeof req !== "object" || req === null) return null;
  const id = (req as Record<string, unknown>).id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** The JSON-RPC error code of a serialized answer, 0 for a result. */
function answeredCode(out: string): number {
  // Keys come after the id, whose JSON has no unescaped quote: whichever of `"result":` and
  // `"error":{"code":` comes first is the answer's own.
  const error = out.indexOf('"error":{"code":');
  if (error === -1) return 0;
  const result = out.indexOf('"result":');
  if (result !== -1 && result < error) return 0;
  return Number.parseInt(out.slice(error + 16, error + 32), 10) || 0;
}

export function errorResponse(id: RequestId, err: RPCError): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(err)}}`;
}

/**
 * `head`, `bytes` and `}` as bytes: around them in their buffer when it is theirs alone (`own`)
 * and has the room, else copied. Not as a string: V8 places each string over 128 kB in fresh
 * memory of its own, whose pages the system faults in one by one, and a string joined to a large
 * one is flattened into another as large when its bytes are counted or written; a fresh buffer
 * of that size costs as much.
 */
function withBytes(head: string, bytes: Uint8Array, own: boolean): Uint8Array {
  const at = Buffer.byteLength(head, "utf8");
  const end = bytes.byteOffset + bytes.length;
  if (own && at <= bytes.byteOffset && end < bytes.buffer.byteLength) {
    const out = Buffer.from(bytes.buffer, bytes.byteOffset - at, at + bytes.length + 1);
    out.write(head, 0, "utf8");
    out[at + bytes.length] = 0x7d; // }
    return out;
  }
  const out = Buffer.allocUnsafe(at + bytes.length + 1);
  out.write(head, 0, "utf8");
  out.set(bytes, at);
  out[at + bytes.length] = 0x7d; // }
  return out;
}

/** A batch's answers as one JSON array: bytes when any of them is. */
function joinParts(parts: readonly (string | Uint8Array)[]): WireOutput {
  if (parts.length === 0) return undefined;
  if (parts.every((part) => typeof part === "string")) return `[${parts.join(",")}]`;
  const chunks: Uint8Array[] = [];
  for (const [i, part] of parts.entries()) {
    chunks.push(Buffer.from(i === 0 ? "[" : ","));
    chunks.push(typeof part === "string" ? Buffer.from(part, "utf8") : part);
  }
  chunks.push(Buffer.from("]"));
  return Buffer.concat(chunks);
}

/** The answer as text (it is UTF-8 when it came as bytes). */
function asText(out: WireOutput): DispatchOutput {
  return out instanceof Uint8Array
    ? Buffer.from(out.buffer, out.byteOffset, out.length).toString("utf8")
    : out;
}

function byteLength(s: string | Uint8Array): number {
  if (typeof s !== "string") return s.length;
  return Buffer.byteLength(s, "utf8");
}

function withDeadline<T>(
  promise: Promise<T>,
  deadline: number,
  method: string,
  limit: string,
): Promise<T> {
  if (deadline === 0) return promise;
  return new Promise<T>((resolve, reject) => {
    const entry: Pending = {
      deadline,
      expire: () =>
        reject(
          new RPCError(
            RPCErrorCode.LIMIT_EXCEEDED,
            `request timed out: ${method} ran over ${limit}`,
          ),
        ),
    };
    watchDeadline(entry);
    promise.then(
      (v) => {
        settled(entry);
        resolve(v);
      },
      (e: unknown) => {
        settled(entry);
        reject(e);
      },
    );
  });
}

/** A request waiting under a deadline: `expire` answers it as timed out. */
interface Pending {
  readonly deadline: number;
  readonly expire: () => void;
}

/**
 * The requests of the process that wait under a deadline, and one timer for the earliest of
 * them: a timer of its own for each request (armed and cleared for every call, most of which
 * end in a millisecond) cost a few microseconds a request. A request that ends leaves the set;
 * the timer, when it fires, expires what is due and is armed again for what is left.
 */
const pending = new Set<Pending>();
let timer: NodeJS.Timeout | undefined;
let armedFor = Number.POSITIVE_INFINITY;

function watchDeadline(entry: Pending): void {
  pending.add(entry);
  if (entry.deadline < armedFor) arm(entry.deadline);
}

function arm(at: number): void {
  if (timer !== undefined) clearTimeout(timer);
  armedFor = at;
  // The requests keep the process alive by their own work; a deadline never does.
  timer = setTimeout(sweep, Math.max(0, at - Date.now())).unref();
}

/** `entry` ended before its deadline. */
function settled(entry: Pending): void {
  pending.delete(entry);
  if (pending.size === 0 && timer !== undefined) {
    clearTimeout(timer);
    timer = undefined;
    armedFor = Number.POSITIVE_INFINITY;
  }
}

function sweep(): void {
  timer = undefined;
  armedFor = Number.POSITIVE_INFINITY;
  const now = Date.now();
  let next = Number.POSITIVE_INFINITY;
  for (const entry of pending) {
    if (entry.deadline <= now) {
      pending.delete(entry);
      entry.expire();
    } else if (entry.deadline < next) next = entry.deadline;
  }
  if (next !== Number.POSITIVE_INFINITY) arm(next);
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
