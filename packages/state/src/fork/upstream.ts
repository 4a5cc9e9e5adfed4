import { setMaxListeners } from "node:events";
import { StateError, StateErrorCode } from "../errors.js";
import { type Endpoint, parseEndpoint } from "./endpoint.js";
import { type PostOutcome, postJson } from "./httpPost.js";
import {
  describe,
  isErrorEnvelope,
  isRateLimitError,
  parseAnswer,
  type RpcAnswer,
  type RpcErrorObject,
} from "./jsonRpc.js";
import { RateBudget } from "./rateBudget.js";
import type { UpstreamCalls } from "./upstreamCalls.js";
import {
  type ResolvedUpstreamOptions,
  resolveUpstreamOptions,
  type UpstreamDeps,
  type UpstreamLogger,
  type UpstreamOptions,
} from "./upstreamOptions.js";

/** JSON-RPC parameters: positional or named. */
export type UpstreamParams = readonly unknown[] | Readonly<Record<string, unknown>>;

export interface UpstreamCall {
  readonly method: string;
  readonly params?: UpstreamParams;
}

/**
 * One call of `callAll`: its result, or the error `call` would have rejected with
 * (`STATE_UPSTREAM_ERROR`, `STATE_UPSTREAM_UNAVAILABLE`, `STATE_UPSTREAM_CLOSED`, ...).
 */
export type UpstreamResult =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: StateError };

export interface UpstreamUrlStats {
  /** HTTP requests sent to the URL. */
  readonly requests: number;
  /** Of those, requests that brought no usable answer (transport, status, body, rate limit). */
  readonly failures: number;
}

export interface UpstreamStats {
  /** HTTP requests sent. */
  readonly requests: number;
  /** JSON-RPC calls accepted by `call` and `callAll`. */
  readonly calls: number;
  /** HTTP requests that carried a JSON-RPC batch (two calls or more). */
  readonly batches: number;
  /** Failed requests whose calls were sent to the same URL again after a backoff. */
  readonly retries: number;
  /** Moves of calls to another URL (one per group of calls moved together). */
  readonly failovers: number;
  /** Answers that said "too many requests" (HTTP 429, or a JSON-RPC rate-limit error). */
  readonly rateLimited: number;
  /** By URL as shown (redacted), in the order given. */
  readonly byUrl: Readonly<Record<string, UpstreamUrlStats>>;
}

/** Why one HTTP request gave no answer for the calls it carried. */
interface Failure {
  readonly reason: string;
  readonly rateLimited: boolean;
  /** The wait the upstream asked for (`Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number | undefined;
  /** Waiting will not change it (an HTTP 4xx): fail over without retrying this URL. */
  readonly final: boolean;
  /** The URL did not answer within `timeoutMs`. */
  readonly timedOut?: boolean;
}

interface UrlState {
  readonly endpoint: Endpoint;
  /** Its key in `stats().byUrl`: the redacted URL, numbered if two redact alike. */
  readonly key: string;
  /** Still sent batches (false once it refused one). */
  batches: boolean;
  /** New calls pass it over until then. */
  downUntil: number;
  /** It asked us to slow down: nothing is sent to it until then. */
  pausedUntil: number;
  /** Calls waiting for the pause to end. */
  readonly held: PendingCall[];
  /** A call gave up on it, and it has not answered since. */
  suspect: boolean;
  requests: number;
  failures: number;
}

interface PendingCall {
  /** The JSON-RPC id, also the order of arrival. */
  readonly id: number;
  readonly method: string;
  /** The call's JSON envelope, encoded once. */
  readonly body: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: StateError) => void;
  /** Index of the URL it is sent to. */
  url: number;
  /** Failed attempts on `url`. */
  attempts: number;
  /** URLs given up on, in order, with the last reason of each. */
  readonly given: Map<number, { reason: string; attempts: number }>;
  settled: boolean;
}

/** Statuses that say "try again later" rather than "this request is wrong here". */
const TRANSIENT_STATUS = new Set([408, 502, 503, 504]);

/**
 * The client every request of a fork to its upstream JSON-RPC endpoints goes through.
 *
 * - Calls made in the same turn of the event loop (and those waiting for the budget) leave
 *   together as JSON-RPC batches of up to `maxBatch`, matched by id. A URL that refuses a batch
 *   (a status other than 429/502/503/504/408, an answer that is not an array, one error object)
 *   is sent single requests from then on.
 * - At most `rps` HTTP requests a second to all URLs together, and `maxConcurrent` at a time;
 *   calls wait their turn in order of arrival and never fail because of the budget.
 * - Rate limits (HTTP 429, JSON-RPC -32005 or "rate limit"/"too many requests"), 5xx, 408,
 *   connection errors, timeouts and unusable answers are retried with capped exponential
 *   backoff and jitter (`Retry-After` honoured up to `maxRetryAfterMs`), `retries` times per
 *   URL; then the calls fail over to the next URL in the ring. A 4xx fails over at once, and
 *   so does a timeout while another URL is left to try (a stalled upstream costs one timeout).
 *   After a rate limit, nothing more goes to that URL until the backoff has passed: calls for
 *   it are held and leave together then.
 * - A URL given up on is passed over by new calls for `cooldownMs`, then preferred again in the
 *   order given; until it answers, a call gives it one attempt when another URL is healthy.
 * - A JSON-RPC error that is not a rate limit is the call's answer: not retried, not failed
 *   over (`STATE_UPSTREAM_ERROR`).
 * - No timer exists while no call is pending; `close` clears them all.
 */
export class Upstream implements UpstreamCalls {
  readonly #opts: ResolvedUpstreamOptions;
  readonly #urls: UrlState[];
  readonly #budget: RateBudget;
  readonly #log: UpstreamLogger | undefined;
  readonly #now: () => number;
  readonly #sleepFn: (ms: number) => Promise<void>;
  readonly #random: () => number;
  #queue: PendingCall[] = [];
  readonly #live = new Set<PendingCall>();
  readonly #closer = new AbortController();
  readonly #timers = new Set<NodeJS.Timeout>();
  #scheduled: NodeJS.Immediate | undefined;
  #pumping = false;
  /** HTTP requests sent and not yet answered. */
  #inFlight = 0;
  /** Wakes the line when a request in flight ends (the line waits for a free slot). */
  #slotFree: (() => void) | undefined;
  #nextId = 1;
  #requests = 0;
  #calls = 0;
  #batches = 0;
  #retries = 0;
  #failovers = 0;
  #rateLimited = 0;

  constructor(options: UpstreamOptions & UpstreamDeps) {
    this.#opts = resolveUpstreamOptions(options);
    this.#urls = urlStates(this.#opts.urls);
    this.#budget = new RateBudget(this.#opts.rps, this.#opts.burst);
    this.#log = options.logger;
    this.#now = options.now ?? (() => performance.now());
    this.#sleepFn = options.sleep ?? ((ms) => this.#timerSleep(ms));
    this.#random = options.random ?? Math.random;
    // Every request in flight and every sleeping group listens for `close`.
    setMaxListeners(0, this.#closer.signal);
  }

  /**
   * Sends one call; resolves with its `result`. Rejects with `STATE_UPSTREAM_ERROR` (the
   * upstream's JSON-RPC error), `STATE_UPSTREAM_UNAVAILABLE` (every URL failed),
   * `STATE_UPSTREAM_CLOSED` or `STATE_UPSTREAM_INVALID_CALL`.
   */
  call(method: string, params: UpstreamParams = []): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.#closer.signal.aborted) throw closedError(method);
      const id = this.#nextId++;
      const call: PendingCall = {
        id,
        method,
        body: encodeCall(id, method, params),
        resolve,
        reject,
        url: this.#startUrl(),
        attempts: 0,
        given: new Map(),
        settled: false,
      };
      this.#calls++;
      this.#live.add(call);
      this.#enqueue([call]);
    });
  }

  /**
   * Sends the calls together; each gets its result or the error `call` would reject with, in
   * order, so that one failure fails none of the others. Rejects only when `calls` is not an
   * array (`STATE_UPSTREAM_INVALID_CALL`).
   */
  async callAll(calls: readonly UpstreamCall[]): Promise<UpstreamResult[]> {
    if (!Array.isArray(calls)) {
      throw new StateError(StateErrorCode.UPSTREAM_INVALID_CALL, "callAll takes an array of calls");
    }
    return Promise.all(
      calls.map((c) =>
        this.call(c?.method, c?.params).then(
          (result): UpstreamResult => ({ ok: true, result }),
          (error: StateError): UpstreamResult => ({ ok: false, error }),
        ),
      ),
    );
  }

  /** The upstream's name in messages: its URLs, redacted (no credentials), in order. */
  describe(): string {
    return this.#urls.map((u) => u.key).join(", ");
  }

  stats(): UpstreamStats {
    const byUrl: Record<string, UpstreamUrlStats> = {};
    for (const url of this.#urls) {
      byUrl[url.key] = { requests: url.requests, failures: url.failures };
    }
    return {
      requests: this.#requests,
      calls: this.#calls,
      batches: this.#batches,
      retries: this.#retries,
      failovers: this.#failovers,
      rateLimited: this.#rateLimited,
      byUrl,
    };
  }

  /** Rejects every pending call with `STATE_UPSTREAM_CLOSED`, aborts requests, clears timers. */
  close(): void {
    if (this.#closer.signal.aborted) return;
    this.#closer.abort();
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#queue.length = 0;
    this.#wakeLine();
    for (const call of [...this.#live]) this.#reject(call, closedError(call.method));
  }

  #wakeLine(): void {
    const wake = this.#slotFree;
    this.#slotFree = undefined;
    wake?.();
  }

  get #closed(): boolean {
    return this.#closer.signal.aborted;
  }

  /** Puts calls in the line (in order of arrival) and makes sure the line moves. */
  #enqueue(calls: readonly PendingCall[]): void {
    if (this.#closed) return;
    const now = this.#now();
    for (const call of calls) {
      if (call.settled) continue;
      const url = this.#urls[call.url] as UrlState;
      if (url.pausedUntil > now) this.#hold(url, call);
      else insertInOrder(this.#queue, call);
    }
    if (this.#pumping || this.#scheduled !== undefined) return;
    // One turn of the event loop later, so that the calls of this turn leave together.
    this.#scheduled = setImmediate(() => {
      this.#scheduled = undefined;
      void this.#pump();
    });
  }

  /**
   * Keeps a call for a URL that said "too many requests" until its pause ends: one backoff
   * for all of them (and one log line), rather than one more refusal and backoff each.
   */
  #hold(url: UrlState, call: PendingCall): void {
    url.held.push(call);
    if (url.held.length > 1) return;
    void (async () => {
      while (url.pausedUntil > this.#now() && !this.#closed) {
        await this.#sleep(url.pausedUntil - this.#now());
      }
      this.#enqueue(url.held.splice(0));
    })();
  }

  /**
   * Sends the line out, one request per token of the budget. A batch is made when its token
   * is granted, so calls that arrive while the budget holds the line back join it.
   */
  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        if (this.#inFlight >= this.#opts.maxConcurrent) {
          await new Promise<void>((resolve) => {
            this.#slotFree = resolve;
          });
          continue;
        }
        const wait = this.#budget.reserve(this.#now());
        if (wait > 0) await this.#sleep(wait);
        this.#holdPaused();
        const chunk = this.#takeChunk();
        if (chunk.length > 0) void this.#send(chunk);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Takes out of the line the calls for URLs that asked to slow down since they joined it. */
  #holdPaused(): void {
    const now = this.#now();
    if (!this.#urls.some((url) => url.pausedUntil > now)) return;
    const keep: PendingCall[] = [];
    for (const call of this.#queue) {
      const url = this.#urls[call.url] as UrlState;
      if (url.pausedUntil > now) this.#hold(url, call);
      else keep.push(call);
    }
    this.#queue = keep;
  }

  /** The first call in line, with the calls behind it for the same URL up to a batch. */
  #takeChunk(): PendingCall[] {
    const queue = this.#queue;
    const head = queue[0];
    if (head === undefined) return [];
    const limit = this.#urls[head.url]?.batches ? this.#opts.maxBatch : 1;
    const chunk: PendingCall[] = [];
    const skipped: PendingCall[] = [];
    let scanned = 0;
    // Stops at a full batch: with one URL in use, only the calls taken are looked at.
    for (; scanned < queue.length && chunk.length < limit; scanned++) {
      const call = queue[scanned] as PendingCall;
      (call.url === head.url ? chunk : skipped).push(call);
    }
    if (skipped.length === 0) queue.splice(0, scanned);
    else this.#queue = skipped.concat(queue.slice(scanned));
    return chunk;
  }

  async #send(chunk: PendingCall[]): Promise<void> {
    const index = (chunk[0] as PendingCall).url;
    const url = this.#urls[index] as UrlState;
    const batch = chunk.length > 1;
    const body = batch ? `[${chunk.map((c) => c.body).join(",")}]` : (chunk[0] as PendingCall).body;
    this.#requests++;
    url.requests++;
    if (batch) this.#batches++;
    this.#inFlight++;
    const outcome = await postJson(url.endpoint, body, {
      timeoutMs: this.#opts.timeoutMs,
      maxBytes: this.#opts.maxResponseBytes,
      closed: this.#closer.signal,
    });
    this.#inFlight--;
    this.#wakeLine();
    if (this.#closed) return;
    this.#handle(chunk, index, outcome);
  }

  /** Reads an HTTP outcome for the calls it carried. */
  #handle(chunk: PendingCall[], index: number, outcome: PostOutcome): void {
    const failure = this.#read(chunk, index, outcome);
    if (failure !== undefined) this.#failed(chunk, index, failure);
  }

  /** Settles what the outcome answers; the failure of the request, if it is one. */
  #read(chunk: PendingCall[], index: number, outcome: PostOutcome): Failure | undefined {
    if (outcome.kind === "failed")
      return { ...transport(outcome.reason), timedOut: outcome.timedOut === true };
    const batch = chunk.length > 1;
    const { status } = outcome;
    if (status === 429) {
      const retryAfterMs = parseRetryAfter(outcome.retryAfter);
      return { reason: "HTTP 429", rateLimited: true, retryAfterMs, final: false };
    }
    if (status < 200 || status > 299) {
      const transient = TRANSIENT_STATUS.has(status);
      if (batch && !transient) {
        this.#refuseBatches(chunk, index, `HTTP ${status}`);
        return undefined;
      }
      // A 503 may say when to come back, too.
      const retryAfterMs = transient ? parseRetryAfter(outcome.retryAfter) : undefined;
      const final = !transient && status < 500;
      return { reason: `HTTP ${status}`, rateLimited: false, retryAfterMs, final };
    }
    let json: unknown;
    try {
      json = JSON.parse(outcome.body);
    } catch {
      return transport(`answer is not JSON (${describe(outcome.body.slice(0, 40))})`);
    }
    const answers = batch ? this.#batchAnswers(chunk, index, json) : singleAnswer(chunk, json);
    if (answers === undefined) return undefined;
    if (typeof answers === "string") return transport(answers);
    if (!(answers instanceof Map)) return answers;
    this.#settle(chunk, index, answers);
    return undefined;
  }

  /**
   * The answers of a batch by call, what is wrong with them, or the rate limit of the whole
   * batch; `undefined` when the answer refused batches (the calls are sent again singly).
   */
  #batchAnswers(
    chunk: PendingCall[],
    index: number,
    json: unknown,
  ): Map<PendingCall, RpcAnswer> | string | Failure | undefined {
    const whole = wholeBatchError(json);
    if (whole !== undefined && isRateLimitError(whole)) return rateLimit(whole);
    if (whole !== undefined || !Array.isArray(json)) {
      const reason =
        whole !== undefined
          ? `error ${whole.code}: ${clip(whole.message)}`
          : "an answer that is not an array";
      this.#refuseBatches(chunk, index, reason);
      return undefined;
    }
    return matchBatch(chunk, json);
  }

  /** Gives each call its answer; calls answered "rate limited" are retried. */
  #settle(chunk: PendingCall[], index: number, answers: Map<PendingCall, RpcAnswer>): void {
    const url = this.#urls[index] as UrlState;
    const limited: PendingCall[] = [];
    let limitedBy: RpcErrorObject | undefined;
    for (const call of chunk) {
      const answer = answers.get(call) as RpcAnswer;
      if ("result" in answer) this.#resolve(call, answer.result);
      else if (isRateLimitError(answer.error)) {
        limited.push(call);
        limitedBy = answer.error;
      } else this.#reject(call, upstreamError(url, call.method, answer.error));
    }
    if (limited.length < chunk.length) this.#healthy(url);
    if (limitedBy !== undefined) this.#failed(limited, index, rateLimit(limitedBy));
  }

  /** The URL answered: new calls may prefer it again at once. */
  #healthy(url: UrlState): void {
    if (url.suspect) this.#log?.info?.("Upstream answering again", { url: url.endpoint.shown });
    url.suspect = false;
    url.downUntil = 0;
  }

  /** The URL does not take batches: its calls go again, one request each. */
  #refuseBatches(chunk: PendingCall[], index: number, reason: string): void {
    const url = this.#urls[index] as UrlState;
    url.failures++;
    if (url.batches) {
      url.batches = false;
      this.#log?.warn("Upstream refuses JSON-RPC batches, sending single requests", {
        url: url.endpoint.shown,
        reason,
      });
    }
    this.#enqueue(chunk);
  }

  /** One request failed: its calls retry on the URL after a backoff, or fail over. */
  #failed(chunk: PendingCall[], index: number, failure: Failure): void {
    const url = this.#urls[index] as UrlState;
    url.failures++;
    if (failure.rateLimited) this.#rateLimited++;
    const stay: PendingCall[] = [];
    const move: PendingCall[] = [];
    for (const call of chunk) {
      if (call.settled) continue;
      call.attempts++;
      const exhausted =
        call.attempts >= this.#allowedAttempts(call, index) ||
        (failure.timedOut === true && this.#otherUrlLeft(call, index));
      (failure.final || exhausted ? move : stay).push(call);
    }
    if (move.length > 0) this.#failover(move, index, failure.reason);
    if (stay.length > 0) void this.#retryLater(stay, index, failure);
  }

  /** Attempts a call makes on a URL: one on a suspect URL while a healthy one is left. */
  #allowedAttempts(call: PendingCall, index: number): number {
    const url = this.#urls[index] as UrlState;
    const healthyLeft = this.#urls.some(
      (other, i) => i !== index && !other.suspect && !call.given.has(i),
    );
    return url.suspect && healthyLeft ? 1 : this.#opts.retries + 1;
  }

  /**
   * Whether the call has a URL other than `index` left to try. A URL that let a request time
   * out is left at once when there is: each retry of a stalled upstream costs a whole
   * `timeoutMs` (10 s by default), so retries there would hold every call for a minute before
   * it fails over.
   */
  #otherUrlLeft(call: PendingCall, index: number): boolean {
    return this.#urls.some((_, i) => i !== index && !call.given.has(i));
  }

  async #retryLater(calls: PendingCall[], index: number, failure: Failure): Promise<void> {
    const url = this.#urls[index] as UrlState;
    const attempt = Math.max(...calls.map((c) => c.attempts));
    const delay =
      failure.retryAfterMs !== undefined
        ? Math.min(failure.retryAfterMs, this.#opts.maxRetryAfterMs)
        : this.#backoff(attempt);
    this.#retries++;
    if (failure.rateLimited) url.pausedUntil = Math.max(url.pausedUntil, this.#now() + delay);
    const fields = {
      url: url.endpoint.shown,
      reason: failure.reason,
      delayMs: Math.round(delay),
      attempt,
      calls: calls.length,
    };
    if (failure.rateLimited) this.#log?.warn("Upstream rate limit, backing off", fields);
    else this.#log?.debug?.("Upstream request failed, retrying", fields);
    await this.#sleep(delay);
    this.#enqueue(calls);
  }

  /** Exponential from `backoffMs`, capped, with jitter: between half and all of it. */
  #backoff(attempt: number): number {
    const full = Math.min(this.#opts.maxBackoffMs, this.#opts.backoffMs * 2 ** (attempt - 1));
    return full / 2 + (this.#random() * full) / 2;
  }

  /** The calls give up on a URL: each moves to the next URL it has not given up on. */
  #failover(calls: PendingCall[], index: number, reason: string): void {
    const from = this.#urls[index] as UrlState;
    // One warning per outage of a URL: calls that were in flight when it failed fail over one
    // group after another, and each group after the first says nothing new.
    let known = from.suspect;
    from.suspect = true;
    from.downUntil = this.#now() + this.#opts.cooldownMs;
    const moves = new Map<number, PendingCall[]>();
    for (const call of calls) {
      call.given.set(index, { reason, attempts: call.attempts });
      const next = this.#nextUrl(call, index);
      if (next === undefined) {
        this.#reject(call, this.#unavailable(call));
        continue;
      }
      call.url = next;
      call.attempts = 0;
      moves.set(next, [...(moves.get(next) ?? []), call]);
    }
    for (const [next, group] of moves) {
      this.#failovers++;
      const fields = {
        from: from.endpoint.shown,
        to: (this.#urls[next] as UrlState).endpoint.shown,
        reason,
        calls: group.length,
      };
      if (known) this.#log?.debug?.("Upstream failing, failing over", fields);
      else this.#log?.warn("Upstream failing, failing over", fields);
      known = true;
      this.#enqueue(group);
    }
  }

  /** The next URL round the ring that the call has not given up on, out of cooldown first. */
  #nextUrl(call: PendingCall, from: number): number | undefined {
    const n = this.#urls.length;
    const now = this.#now();
    let fallback: number | undefined;
    for (let step = 1; step < n; step++) {
      const i = (from + step) % n;
      if (call.given.has(i)) continue;
      if ((this.#urls[i] as UrlState).downUntil <= now) return i;
      fallback ??= i;
    }
    return fallback;
  }

  /** Where a new call starts: the first URL out of cooldown, else the one back soonest. */
  #startUrl(): number {
    const now = this.#now();
    let soonest = 0;
    for (const [i, url] of this.#urls.entries()) {
      if (url.downUntil <= now) return i;
      if (url.downUntil < (this.#urls[soonest] as UrlState).downUntil) soonest = i;
    }
    return soonest;
  }

  #unavailable(call: PendingCall): StateError {
    const tried = [...call.given].map(([i, g]) => ({
      url: (this.#urls[i] as UrlState).endpoint.shown,
      reason: g.reason,
      attempts: g.attempts,
    }));
    const list = tried
      .map((t) => `${t.url} (${t.reason}; ${t.attempts} attempt${t.attempts === 1 ? "" : "s"})`)
      .join(", ");
    return new StateError(
      StateErrorCode.UPSTREAM_UNAVAILABLE,
      `no upstream answered ${call.method}: ${list}`,
      { method: call.method, urls: tried },
    );
  }

  #resolve(call: PendingCall, result: unknown): void {
    if (call.settled) return;
    call.settled = true;
    this.#live.delete(call);
    call.resolve(result);
  }

  #reject(call: PendingCall, error: StateError): void {
    if (call.settled) return;
    call.settled = true;
    this.#live.delete(call);
    call.reject(error);
  }

  /** Waits, or less if the client closes meanwhile. */
  #sleep(ms: number): Promise<void> {
    const signal = this.#closer.signal;
    if (ms <= 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      this.#sleepFn(ms).then(done, done);
    });
  }

  /** The default sleep: a timer `close` clears. */
  #timerSleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.add(timer);
    });
  }
}

/** Puts a call in line by id: new calls at the end, calls sent again where they arrived. */
function insertInOrder(queue: PendingCall[], call: PendingCall): void {
  const last = queue[queue.length - 1];
  if (last === undefined || last.id < call.id) {
    queue.push(call);
    return;
  }
  let low = 0;
  let high = queue.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((queue[mid] as PendingCall).id < call.id) low = mid + 1;
    else high = mid;
  }
  queue.splice(low, 0, call);
}

function urlStates(urls: readonly string[]): UrlState[] {
  const seen = new Map<string, number>();
  return urls.map((href) => {
    const endpoint = parseEndpoint(href);
    const count = (seen.get(endpoint.shown) ?? 0) + 1;
    seen.set(endpoint.shown, count);
    return {
      endpoint,
      key: count === 1 ? endpoint.shown : `${endpoint.shown} (#${count})`,
      batches: true,
      downUntil: 0,
      pausedUntil: 0,
      held: [],
      suspect: false,
      requests: 0,
      failures: 0,
    };
  });
}

/** The call's JSON envelope; `STATE_UPSTREAM_INVALID_CALL` when it cannot be one. */
function encodeCall(id: number, method: unknown, params: unknown): string {
  if (typeof method !== "string" || method === "") {
    throw invalidCall(`an upstream call needs a method name, got ${describe(method)}`);
  }
  if (typeof params !== "object" || params === null) {
    throw invalidCall(`params of ${method} must be an array or an object`);
  }
  try {
    return JSON.stringify({ jsonrpc: "2.0", id, method, params });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw invalidCall(`params of ${method} are not JSON: ${why}`);
  }
}

/** The answer of a single request: its id must be the call's (or null on an error). */
function singleAnswer(chunk: PendingCall[], json: unknown): Map<PendingCall, RpcAnswer> | string {
  const call = chunk[0] as PendingCall;
  const answer = parseAnswer(json);
  if (typeof answer === "string") return answer;
  const nullOnError = answer.id === null && "error" in answer;
  if (answer.id !== call.id && !nullOnError) {
    return `answer has id ${describe(answer.id)}, not ${call.id}`;
  }
  return new Map([[call, answer]]);
}

/** Pairs a batch's answers with its calls by id: every id once, no other. */
function matchBatch(chunk: PendingCall[], json: unknown[]): Map<PendingCall, RpcAnswer> | string {
  const byId = new Map(chunk.map((call) => [call.id, call]));
  const answers = new Map<PendingCall, RpcAnswer>();
  for (const item of json) {
    const answer = parseAnswer(item);
    if (typeof answer === "string") return `batch ${answer}`;
    const call = typeof answer.id === "number" ? byId.get(answer.id) : undefined;
    if (call === undefined) return `batch answer has an unknown id ${describe(answer.id)}`;
    if (answers.has(call)) return `batch answer has id ${call.id} twice`;
    answers.set(call, answer);
  }
  const missing = chunk.filter((call) => !answers.has(call)).map((call) => call.id);
  if (missing.length > 0) return `batch answer has no answer for id ${missing.join(", ")}`;
  return answers;
}

/** One error object answering a whole batch (bare, or alone in an array with a null id). */
function wholeBatchError(json: unknown): RpcErrorObject | undefined {
  const single = Array.isArray(json) && json.length === 1 ? json[0] : json;
  if (!isErrorEnvelope(single)) return undefined;
  const id = (single as { id?: unknown }).id;
  return single === json || id === null || id === undefined ? single.error : undefined;
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; `undefined` if neither. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function transport(reason: string): Failure {
  return { reason, rateLimited: false, final: false };
}

function rateLimit(error: RpcErrorObject): Failure {
  const reason = `rate limited (error ${error.code}: ${clip(error.message)})`;
  return { reason, rateLimited: true, final: false };
}

function upstreamError(url: UrlState, method: string, error: RpcErrorObject): StateError {
  return new StateError(
    StateErrorCode.UPSTREAM_ERROR,
    `upstream ${url.endpoint.shown} answered ${method} with error ${error.code}: ${clip(error.message)}`,
    { url: url.endpoint.shown, method, code: error.code, message: error.message, data: error.data },
  );
}

function closedError(method: unknown): StateError {
  return new StateError(
    StateErrorCode.UPSTREAM_CLOSED,
    `upstream client closed before ${String(method)} was answered`,
    { method },
  );
}

function invalidCall(message: string): StateError {
  return new StateError(StateErrorCode.UPSTREAM_INVALID_CALL, message);
}

/** Upstream text in our messages is bounded (the whole of it stays in `meta`). */
function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
