import { Worker } from "node:worker_threads";
import type { Chain, HeadChange } from "@nodex/chain";
import { TraceAbort } from "@nodex/evm";
import {
  decodeHeavyFailure,
  HeavyErrorCode,
  type HeavyRequest,
  HeavyRequestError,
  type HeavyRequestService,
} from "@nodex/rpc";
import type { Database } from "@nodex/state";
import type { Address, Logger } from "@nodex/types";
import type { FromHeavyWorker, HeavyWorkerData, ToHeavyWorker } from "./heavyWorker.js";

const ZERO_ADDRESS = new Uint8Array(20) as Address;

/** Worker threads for heavy requests by default (`--rpc-worker-threads`). */
export const DEFAULT_RPC_WORKER_THREADS = 2;
/** Heavy requests that may wait for a thread by default (`--rpc-worker-queue`). */
export const DEFAULT_RPC_WORKER_QUEUE = 256;

export interface HeavyPoolOptions {
  /** Worker threads, each serving one request at a time. */
  readonly threads: number;
  /** Requests that may wait for a thread; one more is refused (-32011). */
  readonly maxQueued: number;
}

export interface HeavyPoolDeps {
  /** The node's database, opened with `multithreading`. */
  readonly db: Database;
  /** The writer: requests see its head, once that head's batch has landed. */
  readonly chain: Chain;
  readonly logger: Logger;
  /**
   * The coinbase of the block a call runs in (`debug_traceCall`), the main thread's: told to
   * the worker with each request. The zero address when absent.
   */
  readonly coinbase?: () => Address;
  /** The worker entry; the built `heavyWorker.js` beside this file when absent (tests). */
  readonly workerUrl?: URL;
}

interface Job {
  readonly request: HeavyRequest;
  resolve(text: string | Uint8Array): void;
  reject(err: Error): void;
}

interface Slot {
  readonly worker: Worker;
  ready: boolean;
  /** The job the worker serves; one at a time. */
  job: Job | undefined;
  id: number;
  /** Canonical numbers changed since the worker's last request (each once, however often). */
  changed: Set<bigint>;
  /** Its job settled and the slot left the pool (it failed or exited). */
  gone: boolean;
}

/**
 * Heavy requests (traces, `eth_getLogs`) on a bounded pool of worker threads that read the
 * node's database, so that they never hold the thread that answers every other request. A
 * request waits in one queue, first come first served, for a free thread; it sees the head of
 * the moment it leaves the queue, once that head's batch has landed in LevelDB. A request still
 * queued at its trace deadline is dropped with the tracers' own error. A thread that fails or
 * exits fails its request (-32603, logged) and is replaced; a thread that fails before it is
 * ready is not (the node logs why and serves with the others, or fails heavy requests when none
 * is left).
 */
export class HeavyRequestPool implements HeavyRequestService {
  readonly #data: HeavyWorkerData;
  readonly #deps: HeavyPoolDeps;
  readonly #log: Logger;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  readonly #unsubscribe: () => void;
  #stopped = false;
  #nextId = 1;
  /** Threads ended by `pause`, started again by `resume`; requests wait meanwhile. */
  #paused = 0;
  /**
   * Threads not started yet: the first heavy request starts one, and the others start once it
   * is ready (see the constructor).
   */
  #unstarted: number;

  readonly #maxQueued: number;

  constructor(opts: HeavyPoolOptions, data: HeavyWorkerData, deps: HeavyPoolDeps) {
    const { threads, maxQueued } = opts;
    if (!Number.isSafeInteger(threads) || threads < 1)
      throw new RangeError(`a pool of worker threads needs at least 1 thread, got ${threads}`);
    if (!Number.isSafeInteger(maxQueued) || maxQueued < 1)
      throw new RangeError(`the queue must hold at least 1 request, got ${maxQueued}`);
    this.#maxQueued = maxQueued;
    this.#data = data;
    this.#deps = deps;
    this.#log = deps.logger;
    // Started by the first heavy request, not with the node: each thread loads the execution
    // stack and opens the database (seconds of CPU), which a node that is never asked for a
    // trace or a large log query would pay at start, while it serves its first transactions.
    this.#unstarted = threads;
    this.#unsubscribe = deps.chain.onHeadChange((change) => this.#onHeadChange(change));
  }

  /**
   * Starts one thread when none is alive and some are to start; the others start once it is
   * ready: threads starting together share the CPU, and the first request would wait for all.
   */
  #startFirst(): void {
    if (this.#unstarted > 0 && this.#slots.size === 0 && this.#paused === 0) {
      this.#unstarted--;
      this.#spawn();
    }
  }

  /** Worker threads alive (ready or starting). */
  get threads(): number {
    return this.#slots.size;
  }

  ready(): boolean {
    if (this.#stopped) return false;
    this.#startFirst();
    for (const slot of this.#slots) if (slot.ready) return true;
    return false;
  }

  run(request: HeavyRequest): Promise<string | Uint8Array> {
    if (this.#stopped) return Promise.reject(new Error("the node is stopping"));
    this.#startFirst();
    if (this.#slots.size === 0 && this.#paused === 0)
      return Promise.reject(new Error("no worker thread for heavy requests is running"));
    if (this.#queue.length >= this.#maxQueued)
      return Promise.reject(
        new HeavyRequestError(
          HeavyErrorCode.QUEUE_FULL,
          `${this.#queue.length} traces and log queries are waiting for a worker thread already: try again later`,
        ),
      );
    return new Promise<string | Uint8Array>((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      this.#pump();
    });
  }

  /**
   * Ends every thread, so that their handles on the database close (the node reopens it after
   * a failure LevelDB holds on to, which lives as long as any handle does). What they were
   * serving fails; new requests wait for `resume`.
   */
  async pause(): Promise<void> {
    if (this.#stopped) return;
    const slots = [...this.#slots];
    this.#slots.clear();
    this.#paused += slots.length;
    for (const slot of slots) {
      slot.gone = true;
      slot.job?.reject(new Error("the node's storage is being reopened"));
      slot.job = undefined;
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** Starts again the threads `pause` ended. */
  resume(): void {
    const count = this.#paused;
    this.#paused = 0;
    if (this.#stopped) return;
    for (let i = 0; i < count; i++) this.#spawn();
  }

  /** Fails what waits, then ends every thread. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#unsubscribe();
    for (const job of this.#queue.splice(0)) job.reject(new Error("the node is stopping"));
    const slots = [...this.#slots];
    this.#slots.clear();
    for (const slot of slots) {
      slot.gone = true;
      slot.job?.reject(new Error("the node is stopping"));
      slot.job = undefined;
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  #spawn(): void {
    const url = this.#deps.workerUrl ?? new URL("./heavyWorker.js", import.meta.url);
    const worker = new Worker(url, { workerData: this.#data });
    const slot: Slot = {
      worker,
      ready: false,
      job: undefined,
      id: 0,
      changed: new Set(),
      gone: false,
    };
    this.#slots.add(slot);
    worker.on("message", (message: FromHeavyWorker) => this.#onMessage(slot, message));
    worker.on("error", (err) => this.#lost(slot, `failed: ${err.message}`, err));
    worker.on("exit", (code) => this.#lost(slot, `exited with code ${code}`));
  }

  #onMessage(slot: Slot, message: FromHeavyWorker): void {
    if (slot.gone) return;
    if (message.kind === "ready") {
      slot.ready = true;
      this.#pump();
      const count = this.#unstarted;
      this.#unstarted = 0;
      for (let i = 0; i < count; i++) this.#spawn();
      return;
    }
    const job = slot.job;
    if (job === undefined || message.id !== slot.id) return;
    slot.job = undefined;
    if (message.kind === "result") job.resolve(message.text);
    else job.reject(decodeHeavyFailure(message.failure));
    this.#pump();
  }

  /** A thread that failed or exited: its request fails, and it is replaced if it had started. */
  #lost(slot: Slot, what: string, err?: Error): void {
    if (slot.gone || this.#stopped) return;
    slot.gone = true;
    this.#slots.delete(slot);
    const job = slot.job;
    slot.job = undefined;
    const method = job?.request.method;
    this.#log.error("A worker thread for heavy requests stopped", {
      reason: what,
      ...(method === undefined ? {} : { method }),
      ...(err?.stack === undefined ? {} : { stack: err.stack }),
      replaced: slot.ready,
    });
    job?.reject(new Error(`the worker thread serving ${method} ${what}`));
    void slot.worker.terminate();
    if (slot.ready) this.#spawn();
    else if (this.#slots.size === 0) {
      for (const queued of this.#queue.splice(0))
        queued.reject(new Error("no worker thread for heavy requests is running"));
    }
  }

  #onHeadChange(change: HeadChange): void {
    if (change.removed.length === 0) return;
    const numbers = [...change.removed, ...change.added].map((b) => b.block.header.number);
    for (const slot of this.#slots) for (const n of numbers) slot.changed.add(n);
  }

  /** Hands queued requests to free threads. */
  #pump(): void {
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      if (!slot.ready || slot.job !== undefined || slot.gone) continue;
      const job = this.#takeLive();
      if (job === undefined) return;
      slot.job = job;
      slot.id = this.#nextId++;
      void this.#post(slot, job, slot.id);
    }
  }

  /** The first queued request whose deadline has not passed; the others fail as tracers do. */
  #takeLive(): Job | undefined {
    const now = Date.now();
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) {
      const request = job.request;
      const deadline = "budget" in request ? request.budget.deadline : 0;
      if (deadline === 0 || deadline > now) return job;
      job.reject(new TraceAbort("deadline", "the trace ran over the request's time limit"));
    }
    return undefined;
  }

  async #post(slot: Slot, job: Job, id: number): Promise<void> {
    // The head first: every write issued so far (its batch among them) has landed after this.
    const head = this.#deps.chain.head.hash;
    await this.#deps.db.landed();
    if (slot.gone || slot.id !== id) return;
    const changed = [...slot.changed];
    slot.changed = new Set();
    const coinbase = this.#deps.coinbase?.() ?? ZERO_ADDRESS;
    const message: ToHeavyWorker = {
      kind: "request",
      id,
      head,
      changed,
      coinbase,
      request: job.request,
    };
    try {
      slot.worker.postMessage(message);
    } catch (err) {
      slot.job = undefined;
      job.reject(err instanceof Error ? err : new Error(String(err)));
      this.#pump();
    }
  }
}
