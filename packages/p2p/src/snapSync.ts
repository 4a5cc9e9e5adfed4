import {
  type Block,
  type BlockHeader,
  bytesToHex,
  headerHash,
  type Logger,
  type Receipt,
} from "@nodex/types";
import { P2PError, P2PErrorCode } from "./errors.js";
import type { PeerInfo } from "./network.js";
import {
  MAX_BODIES_PER_REQUEST,
  MAX_HEADERS_PER_REQUEST,
  MAX_STATE_ITEMS_PER_REQUEST,
  Protocol,
  type RequestProtocol,
  type RequestTypes,
  requestTokens,
  STATE_ITEMS_PER_TOKEN,
} from "./protocols.js";
import { RateLimiter } from "./rateLimiter.js";
import { PeerEvent } from "./scoring/index.js";
import type { PeerReport, SyncNetwork } from "./sync.js";

/** A piece of the state being downloaded: a trie node, or code (`code`), by its keccak256 hash. */
export interface SnapStateItem {
  readonly hash: Uint8Array;
  readonly code: boolean;
}

/** What the state engine made of the answers to some items. */
export type SnapDelivery =
  | {
      readonly ok: true;
      /** Items written. */
      readonly written: number;
      /** Items answered as not held: pending again. */
      readonly missing: number;
      readonly bytes: number;
    }
  /** An answer that is not its item (a wrong hash, undecodable): nothing was written. */
  | { readonly ok: false; readonly reason: string };

/** Where the state download stands. */
export interface SnapStateProgress {
  readonly accounts: number;
  readonly slots: number;
  readonly nodes: number;
  readonly codes: number;
  readonly bytes: number;
  /** Items known to be needed and not asked for. */
  readonly pending: number;
  /** Items handed out by `take` and not delivered or released. */
  readonly inFlight: number;
}

/**
 * The state download of one root (`StateSync` of `@nodex/state` has this shape): it hands out
 * the items still missing, checks and writes the answers, and finds the items they lead to.
 * Each method may answer directly or by a promise.
 */
export interface SnapStateSync {
  /** At most `max` items to ask for, now in flight; none when all pending are in flight. */
  take(max: number): readonly SnapStateItem[] | Promise<readonly SnapStateItem[]>;
  /**
   * The answers to `items` (in flight), `answers[i]` for `items[i]`, `undefined` for one the
   * peer does not hold. On `ok` the items are no longer in flight (those answered `undefined`
   * are pending again); on `{ok: false}` nothing was written and they stay in flight, for the
   * caller to release.
   */
  deliver(
    items: readonly SnapStateItem[],
    answers: readonly (Uint8Array | undefined)[],
  ): SnapDelivery | Promise<SnapDelivery>;
  /** Puts items in flight back to pending (their request failed). */
  release(items: readonly SnapStateItem[]): void | Promise<void>;
  /** Downloads the state of `root` from now on, keeping what is written. */
  retarget(root: Uint8Array): void | Promise<void>;
  /** Whether the state of the root is complete: nothing pending, nothing in flight. */
  readonly done: boolean;
  progress(): SnapStateProgress;
}

/** A header of the header chain, with its uncles when it has any (from its body). */
export interface SnapHeader {
  readonly header: BlockHeader;
  readonly uncles?: readonly BlockHeader[];
}

/** The local chain as snap sync sees it: the header chain, the state engine, the pivot. */
export interface SnapChain {
  /** The number of the chain's first block (genesis, or an anchor); 0 when absent. */
  readonly firstNumber?: bigint;
  /** The highest header of the verified header chain stored so far (genesis at first). */
  headerTip(): Promise<BlockHeader>;
  /**
   * Checks and stores headers that continue the header chain (parent links, consensus header
   * rules, seals), each with its uncles when it has any (they count in the total difficulty);
   * returns why they are invalid, or undefined.
   */
  storeHeaders(headers: readonly SnapHeader[]): Promise<string | undefined>;
  /** A header of the stored header chain by number. */
  headerByNumber(number: bigint): Promise<BlockHeader | undefined>;
  /** The state engine for a root (`StateSync.open` on the chain's database). */
  openStateSync(root: Uint8Array): Promise<SnapStateSync>;
  /** The persisted pivot of a snap sync in progress (so a restart keeps it), or undefined. */
  snapPivot(): Promise<bigint | undefined>;
  saveSnapPivot(number: bigint): Promise<void>;
  /**
   * Checks the pivot block's body and receipts against its header and makes it the chain's
   * first full block and head (its state must be complete). Returns why not, or undefined.
   */
  installSnapshot(block: Block, receipts: readonly Receipt[]): Promise<string | undefined>;
}

/** The parts of the network snap sync uses (`P2PNetwork` has them). */
export interface SnapNetwork extends SyncNetwork {
  onPeerDisconnected(listener: (peer: PeerInfo) => void): () => void;
}

export interface SnapSyncOptions {
  /** The pivot is this many blocks below the best peer's head. */
  readonly pivotDistance: number;
  /** The pivot moves up when the best peer's head is more than this above it. */
  readonly pivotMaxLag: number;
  /**
   * With no snap sync in progress, snap only when the best peer's head is at least this many
   * blocks above the header chain's tip; otherwise `run` answers `full`.
   */
  readonly minSnapDistance: number;
  /** Headers per request (at most 192). */
  readonly headersPerRequest: number;
  /** State items per request (at most 384). */
  readonly itemsPerRequest: number;
  /** Requests in flight to one peer at once. */
  readonly parallelRequests: number;
  /**
   * What this node asks of one peer: a token bucket in the tokens of a server's rate limit
   * (a header or a block one each, `STATE_ITEMS_PER_TOKEN` state items one), kept under the
   * default `rateLimit` of a server (1,024 and 256 a second) so that a peer never refuses a
   * request, which it would count against this node as a flood.
   */
  readonly peerBudget: { readonly capacity: number; readonly refillPerSecond: number };
  /** How long one request may take. */
  readonly requestTimeoutMs: number;
  /** How often peers are asked for their head (the pivot follows it). */
  readonly statusPollMs: number;
  /** How long to wait before asking again when no peer can answer now (none, rate limited). */
  readonly retryDelayMs: number;
  /** How often progress is logged. */
  readonly progressLogMs: number;
}

export const DEFAULT_SNAP_SYNC_OPTIONS: SnapSyncOptions = Object.freeze({
  pivotDistance: 64,
  pivotMaxLag: 128,
  minSnapDistance: 128,
  headersPerRequest: MAX_HEADERS_PER_REQUEST,
  itemsPerRequest: MAX_STATE_ITEMS_PER_REQUEST,
  parallelRequests: 2,
  peerBudget: Object.freeze({ capacity: 768, refillPerSecond: 192 }),
  requestTimeoutMs: 10_000,
  statusPollMs: 5_000,
  retryDelayMs: 1_000,
  progressLogMs: 5_000,
});

export type SnapPhase = "headers" | "state" | "blocks";

/** Where a snap sync stands (`SnapSync.progress`). */
export interface SnapProgress {
  readonly phase: SnapPhase;
  readonly pivot: bigint;
  /** The best peer's head. */
  readonly highestBlock: bigint;
  /** Headers from the first block's child to the pivot: stored, and in all. */
  readonly headers: { readonly done: number; readonly total: number };
  readonly state: Omit<SnapStateProgress, "inFlight">;
  /**
   * Seconds left at the recent rate: of the headers left in the headers phase; in the state
   * phase, of the items known to be pending (a lower bound: answers lead to more items).
   */
  readonly etaSeconds?: number;
}

/** How a `run` ended. */
export type SnapResult =
  | { readonly result: "installed"; readonly pivot: bigint; readonly hash: Uint8Array }
  /** Snap sync is not worth it (the best head is close): full sync instead. */
  | { readonly result: "full"; readonly reason: string }
  | { readonly result: "stopped" };

const EMPTY_STATE: SnapProgress["state"] = {
  accounts: 0,
  slots: 0,
  nodes: 0,
  codes: 0,
  bytes: 0,
  pending: 0,
};

/** A range of headers to ask for. */
interface Range {
  readonly start: bigint;
  readonly count: number;
}

/**
 * Snapshot sync: picks a pivot `pivotDistance` below the best peer's head, downloads and checks
 * the headers from the header chain's tip to it, downloads the pivot's state in verified pieces
 * from every peer that has it (each answer must hash to what was asked), fetches the pivot
 * block's body and receipts and installs it as the chain's first full block; full sync goes on
 * from there. The pivot moves up when the best head runs `pivotMaxLag` ahead, and when no peer
 * holds its state any more. A restart resumes from the stored headers and the saved pivot.
 * Peers that answer what does not check are reported; every request has a timeout, and `stop`
 * ends `run` promptly.
 */
export class SnapSync {
  readonly #network: SnapNetwork;
  readonly #chain: SnapChain;
  readonly #log: Logger;
  readonly #report: PeerReport;
  readonly #opts: SnapSyncOptions;
  #running: Promise<SnapResult> | undefined;
  #stopped = false;
  /** Sleepers to wake on anything a waiting loop may care for: an answer, a peer, a pivot, stop. */
  readonly #sleepers = new Set<() => void>();
  /** Requests in flight, by peer: aborted when it leaves or on stop. */
  readonly #inFlight = new Map<string, Set<AbortController>>();
  /** Peers that answered what does not check: not asked again. */
  readonly #bad = new Set<string>();
  /** Peers not to ask before the time (ms since the epoch): rate limited, slow, failing. */
  readonly #backoff = new Map<string, number>();
  #phase: SnapPhase = "headers";
  #pivot = 0n;
  /** A pivot to move to, set by the status poll or by peers lacking the state. */
  #nextPivot: bigint | undefined;
  #highest = 0n;
  #headersDone = 0n;
  #engine: SnapStateSync | undefined;
  readonly #rate = new RecentRate();
  readonly #budget: RateLimiter;
  #polling: Promise<unknown> | undefined;
  /** An error of the chain or the state engine while handling an answer: it ends `run`. */
  #failure: { error: unknown } | undefined;

  constructor(
    network: SnapNetwork,
    chain: SnapChain,
    deps: { logger: Logger; report?: PeerReport },
    opts: Partial<SnapSyncOptions> = {},
  ) {
    this.#network = network;
    this.#chain = chain;
    this.#log = deps.logger;
    this.#report = deps.report ?? (() => {});
    this.#opts = { ...DEFAULT_SNAP_SYNC_OPTIONS, ...opts };
    checkOptions(this.#opts);
    this.#budget = new RateLimiter(this.#opts.peerBudget);
  }

  /**
   * Runs the snap sync to its end: `installed` (the pivot block is the chain's head; full sync
   * goes on from it), `full` (the best peer is too close for snap to be worth it), or `stopped`.
   * A call while one runs joins it.
   */
  run(): Promise<SnapResult> {
    this.#stopped = false;
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Ends `run` (it answers `stopped`): requests in flight are abandoned. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const controllers of this.#inFlight.values())
      for (const controller of controllers) controller.abort();
    this.#wake();
    await this.#running;
  }

  /** Where the sync stands; undefined before it has a pivot. */
  progress(): SnapProgress | undefined {
    if (this.#pivot === 0n) return undefined;
    const first = this.#chain.firstNumber ?? 0n;
    const state = this.#engine?.progress();
    const progress: SnapProgress = {
      phase: this.#phase,
      pivot: this.#pivot,
      highestBlock: this.#highest,
      headers: { done: Number(this.#headersDone - first), total: Number(this.#pivot - first) },
      state:
        state === undefined
          ? EMPTY_STATE
          : {
              accounts: state.accounts,
              slots: state.slots,
              nodes: state.nodes,
              codes: state.codes,
              bytes: state.bytes,
              pending: state.pending,
            },
    };
    const eta = this.#eta(progress);
    return eta === undefined ? progress : { ...progress, etaSeconds: eta };
  }

  async #run(): Promise<SnapResult> {
    const unsubscribe = [
      this.#network.onPeerConnected(() => {
        this.#considerPivot();
        this.#wake();
      }),
      this.#network.onPeerDisconnected((peer) => this.#peerLeft(peer.id)),
    ];
    const poll = setInterval(() => void this.#pollStatuses(), this.#opts.statusPollMs);
    poll.unref();
    const log = setInterval(() => this.#logProgress(), this.#opts.progressLogMs);
    log.unref();
    try {
      return await this.#sync();
    } finally {
      clearInterval(poll);
      clearInterval(log);
      for (const stop of unsubscribe) stop();
      for (const controllers of this.#inFlight.values())
        for (const controller of controllers) controller.abort();
    }
  }

  async #sync(): Promise<SnapResult> {
    const best = await this.#firstPeer();
    if (best === undefined) return { result: "stopped" };
    const tip = await this.#chain.headerTip();
    this.#headersDone = tip.number;
    this.#highest = best.status.bestNumber;
    const saved = await this.#chain.snapPivot();
    if (saved === undefined) {
      const ahead = best.status.bestNumber - tip.number;
      if (ahead < BigInt(this.#opts.minSnapDistance)) {
        const reason = `the best peer's head ${best.status.bestNumber} is ${ahead} blocks ahead, under ${this.#opts.minSnapDistance}`;
        this.#log.info("Snap sync not needed: full sync", { reason });
        return { result: "full", reason };
      }
      await this.#setPivot(best.status.bestNumber - BigInt(this.#opts.pivotDistance));
    } else {
      this.#pivot = saved;
      this.#log.info("Snap sync resumes", { pivot: saved, headerTip: tip.number });
      this.#considerPivot();
    }
    this.#log.info("Snap sync", { pivot: this.#pivot, highest: this.#highest, peer: best.id });
    // Seconds spent in each phase (the pivot's moves included), for the closing log line.
    const spent = { headers: 0, state: 0, blocks: 0 };
    let since = performance.now();
    const lap = (phase: keyof typeof spent) => {
      const now = performance.now();
      spent[phase] += (now - since) / 1000;
      since = now;
    };
    for (;;) {
      this.#phase = "headers";
      if (!(await this.#headers())) return { result: "stopped" };
      lap("headers");
      const header = await this.#chain.headerByNumber(this.#pivot);
      if (header === undefined) throw new Error(`the pivot header ${this.#pivot} is not stored`);
      this.#phase = "state";
      this.#rate.reset();
      if (this.#engine === undefined)
        this.#engine = await this.#chain.openStateSync(header.stateRoot);
      else await this.#engine.retarget(header.stateRoot);
      // What the database held of it already (a restart's earlier download): not asked again.
      this.#log.info("Snap sync state", {
        pivot: this.#pivot,
        root: bytesToHex(header.stateRoot),
        ...this.#engine.progress(),
      });
      const state = await this.#state(this.#engine);
      lap("state");
      if (state === "stopped") return { result: "stopped" };
      if (state === "moved") continue;
      this.#phase = "blocks";
      if (!(await this.#pivotBlock(header))) return { result: "stopped" };
      lap("blocks");
      const hash = headerHash(header);
      const round = (x: number) => Math.round(x * 100) / 100;
      this.#log.info("Snapshot installed", {
        pivot: this.#pivot,
        hash: bytesToHex(hash),
        ...this.#engine.progress(),
        headersSeconds: round(spent.headers),
        stateSeconds: round(spent.state),
        pivotBlockSeconds: round(spent.blocks),
      });
      return { result: "installed", pivot: this.#pivot, hash };
    }
  }

  // --- peers and the pivot ------------------------------------------------------------------

  /** Waits for a peer; the best one (highest total difficulty), or undefined when stopped. */
  async #firstPeer(): Promise<PeerInfo | undefined> {
    for (;;) {
      if (this.#stopped) return undefined;
      const best = this.#bestPeer();
      if (best !== undefined) return best;
      await this.#sleep(this.#opts.retryDelayMs);
    }
  }

  #bestPeer(): PeerInfo | undefined {
    let best: PeerInfo | undefined;
    for (const peer of this.#network.peers()) {
      if (this.#bad.has(peer.id)) continue;
      if (best === undefined || peer.status.totalDifficulty > best.status.totalDifficulty)
        best = peer;
    }
    return best;
  }

  async #setPivot(pivot: bigint): Promise<void> {
    this.#pivot = pivot;
    await this.#chain.saveSnapPivot(pivot);
  }

  /** Asks every peer for its head (one round at a time); the pivot follows the best one. */
  async #pollStatuses(): Promise<void> {
    if (this.#stopped) return;
    this.#polling ??= Promise.all(
      this.#network.peers().map((peer) => this.#network.refreshStatus(peer.id).catch(() => {})),
    ).finally(() => {
      this.#polling = undefined;
    });
    await this.#polling;
    this.#considerPivot();
  }

  /** Plans a pivot move when the best head ran more than `pivotMaxLag` ahead of the pivot. */
  #considerPivot(): void {
    const best = this.#bestPeer();
    if (best === undefined) return;
    if (best.status.bestNumber > this.#highest) this.#highest = best.status.bestNumber;
    if (this.#pivot === 0n || this.#phase === "blocks") return;
    if (best.status.bestNumber - this.#pivot > BigInt(this.#opts.pivotMaxLag)) {
      this.#nextPivot = best.status.bestNumber - BigInt(this.#opts.pivotDistance);
      this.#wake();
    }
  }

  /** Moves the pivot to the planned one; whether it moved. */
  async #movePivot(why: string): Promise<boolean> {
    const next = this.#nextPivot;
    this.#nextPivot = undefined;
    if (next === undefined || next <= this.#pivot) return false;
    this.#log.info("Snap sync pivot moves", { from: this.#pivot, to: next, why });
    await this.#setPivot(next);
    return true;
  }

  /** Peers that may be asked for block `number` (their head is at or past it), now. */
  #usable(number: bigint): PeerInfo[] {
    const now = Date.now();
    return this.#network
      .peers()
      .filter(
        (p) =>
          !this.#bad.has(p.id) &&
          p.status.bestNumber >= number &&
          (this.#backoff.get(p.id) ?? 0) <= now,
      );
  }

  #load(peer: string): number {
    return this.#inFlight.get(peer)?.size ?? 0;
  }

  /**
   * The usable peer with a free slot, `cost` tokens left in its budget and the fewest requests
   * in flight, not in `skip`.
   */
  #pickPeer(
    number: bigint,
    cost: number,
    skip: ReadonlySet<string> = new Set(),
  ): string | undefined {
    let chosen: string | undefined;
    for (const peer of this.#usable(number)) {
      if (skip.has(peer.id) || this.#load(peer.id) >= this.#opts.parallelRequests) continue;
      if (this.#budget.msUntil(peer.id, cost) > 0) continue;
      if (chosen === undefined || this.#load(peer.id) < this.#load(chosen)) chosen = peer.id;
    }
    return chosen;
  }

  #peerLeft(peer: string): void {
    this.#backoff.delete(peer);
    for (const controller of this.#inFlight.get(peer) ?? []) controller.abort();
    this.#wake();
  }

  /**
   * One request to `peer` with the sync's timeout, abandoned when the peer leaves or on stop.
   * A refusal for going over its rate limit, a timeout or a broken stream keep the peer
   * aside for `retryDelayMs`.
   */
  async #request<P extends RequestProtocol>(
    peer: string,
    protocol: P,
    req: RequestTypes[P]["request"],
  ): Promise<RequestTypes[P]["response"]> {
    this.#budget.take(peer, requestTokens(protocol, req));
    const controller = new AbortController();
    const set = this.#inFlight.get(peer) ?? new Set<AbortController>();
    set.add(controller);
    this.#inFlight.set(peer, set);
    try {
      return await this.#network.request(peer, protocol, req, {
        timeoutMs: this.#opts.requestTimeoutMs,
        signal: controller.signal,
      });
    } catch (err) {
      if (!(err instanceof P2PError) || err.code !== P2PErrorCode.ABORTED)
        this.#backoff.set(peer, Date.now() + this.#opts.retryDelayMs);
      throw err;
    } finally {
      set.delete(controller);
      if (set.size === 0) this.#inFlight.delete(peer);
    }
  }

  /** A peer answered what does not check: reported (scoring bans it) and not asked again. */
  #reportBad(peer: string, event: PeerEvent, reason: string): void {
    // Reported once: the first is enough for the scoring to ban it.
    if (this.#bad.has(peer)) return;
    this.#log.warn("Snap sync: a peer answered what does not check", { peer, event, reason });
    this.#bad.add(peer);
    this.#report(peer, event, reason);
  }

  // --- headers ------------------------------------------------------------------------------

  /**
   * Downloads and stores the headers from the tip to the pivot: ranges asked of several peers
   * at once, stored in order. A batch the chain refuses is reported and asked of another
   * peer. True when done, false when stopped.
   */
  async #headers(): Promise<boolean> {
    let tip = (await this.#chain.headerTip()).number;
    this.#headersDone = tip;
    const queue: Range[] = [];
    const ready = new Map<bigint, { headers: readonly SnapHeader[]; peer: string }>();
    const failed = new Map<bigint, Set<string>>();
    const requests = new Set<Promise<void>>();
    let next = tip + 1n;
    const window = BigInt(this.#opts.headersPerRequest * this.#opts.parallelRequests * 8);
    for (;;) {
      if (this.#stopped) {
        await Promise.allSettled(requests);
        return false;
      }
      this.#check();
      await this.#movePivot("the best head ran ahead");
      const answer = ready.get(tip + 1n);
      if (answer !== undefined) {
        ready.delete(tip + 1n);
        const why = await this.#chain.storeHeaders(answer.headers);
        if (why !== undefined) {
          const start = tip + 1n;
          this.#reportBad(answer.peer, PeerEvent.INVALID_HEADER, `headers from ${start}: ${why}`);
          queue.unshift({ start, count: answer.headers.length });
          addTo(failed, start, answer.peer);
        } else {
          tip = answer.headers[answer.headers.length - 1]!.header.number;
          this.#headersDone = tip;
          this.#rate.add(answer.headers.length);
          failed.delete(answer.headers[0]!.header.number);
        }
        continue;
      }
      if (tip >= this.#pivot && requests.size === 0) return true;
      // Ask for what is next, within a window past the tip.
      while (next <= this.#pivot && next - tip <= window) {
        const count = minNumber(this.#opts.headersPerRequest, this.#pivot - next + 1n);
        queue.push({ start: next, count });
        next += BigInt(count);
      }
      while (queue.length > 0) {
        const range = queue[0]!;
        const peer = this.#pickPeer(range.start, range.count, failed.get(range.start));
        if (peer === undefined) break;
        queue.shift();
        this.#spawn(requests, this.#headerRange(peer, range, queue, ready, failed));
      }
      if (requests.size > 0) {
        // Woken when an answer comes.
        await this.#sleep(this.#opts.requestTimeoutMs);
        continue;
      }
      // No peer can be asked now: every one failed the next range (forget that: it may have
      // caught up), or is busy, rate limited or gone. Ask again after a while.
      const head = queue[0];
      if (head !== undefined && this.#pickPeer(head.start, head.count) !== undefined)
        failed.delete(head.start);
      await this.#sleep(this.#opts.retryDelayMs);
    }
  }

  async #headerRange(
    peer: string,
    range: Range,
    queue: Range[],
    ready: Map<bigint, { headers: readonly SnapHeader[]; peer: string }>,
    failed: Map<bigint, Set<string>>,
  ): Promise<void> {
    let withUncles: SnapHeader[];
    try {
      const headers = await this.#request(peer, Protocol.HEADERS_BY_RANGE, range);
      if (headers.length === 0) throw new Error("none given");
      withUncles = await this.#withUncles(peer, headers);
    } catch (err) {
      this.#log.debug("Snap sync: headers not received", {
        peer,
        start: range.start,
        error: String(err),
      });
      addTo(failed, range.start, peer);
      queue.unshift(range);
      return;
    }
    ready.set(range.start, { headers: withUncles, peer });
    if (withUncles.length < range.count)
      queue.unshift({
        start: range.start + BigInt(withUncles.length),
        count: range.count - withUncles.length,
      });
  }

  /**
   * `headers` with the uncles of those that have any, from their bodies (asked of the same
   * peer); the chain checks them against each header's uncles hash.
   */
  async #withUncles(peer: string, headers: readonly BlockHeader[]): Promise<SnapHeader[]> {
    const out: SnapHeader[] = headers.map((header) => ({ header }));
    const wanted = out.filter((h) => h.header.uncleCount > 0);
    for (let i = 0; i < wanted.length; i += MAX_BODIES_PER_REQUEST) {
      const part = wanted.slice(i, i + MAX_BODIES_PER_REQUEST);
      const bodies = await this.#request(
        peer,
        Protocol.BODIES_BY_HASH,
        part.map((h) => headerHash(h.header)),
      );
      if (bodies.length < part.length)
        throw new Error(`${part.length - bodies.length} bodies of headers with uncles not given`);
      part.forEach((h, j) => {
        out[out.indexOf(h)] = { header: h.header, uncles: bodies[j]!.uncles };
      });
    }
    return out;
  }

  // --- state --------------------------------------------------------------------------------

  /**
   * Downloads the pivot's state: items taken from the engine, asked of every peer that has the
   * pivot, `parallelRequests` at a time each. "moved" when the pivot moved (requests in flight
   * delivered first).
   */
  async #state(engine: SnapStateSync): Promise<"done" | "moved" | "stopped"> {
    /** Peers that answered this root's items as not held. */
    const lacking = new Set<string>();
    const requests = new Set<Promise<void>>();
    for (;;) {
      if (this.#stopped) {
        await Promise.allSettled(requests);
        return "stopped";
      }
      this.#check();
      if (this.#nextPivot !== undefined) {
        await Promise.allSettled(requests);
        if (await this.#movePivot("the best head ran ahead")) return "moved";
      }
      if (engine.done && requests.size === 0) return "done";
      let asked = false;
      for (;;) {
        const peer = this.#pickPeer(
          this.#pivot,
          Math.ceil(this.#opts.itemsPerRequest / STATE_ITEMS_PER_TOKEN),
          lacking,
        );
        if (peer === undefined) break;
        const items = await engine.take(this.#opts.itemsPerRequest);
        if (items.length === 0) break;
        asked = true;
        this.#spawn(requests, this.#stateItems(engine, peer, items, lacking));
      }
      if (asked || requests.size > 0) {
        await this.#sleep(this.#opts.requestTimeoutMs);
        continue;
      }
      if (engine.done) continue;
      // Nothing asked and nothing in flight: no peer can answer now.
      const holders = this.#usable(this.#pivot).filter((p) => !lacking.has(p.id));
      if (holders.length === 0 && lacking.size > 0) {
        // Every peer that has the pivot lacks its state (pruned): a newer pivot, if there is one.
        const best = this.#bestPeer();
        const candidate =
          best === undefined
            ? undefined
            : best.status.bestNumber - BigInt(this.#opts.pivotDistance);
        if (candidate !== undefined && candidate > this.#pivot) {
          this.#nextPivot = candidate;
          if (await this.#movePivot("no peer holds the pivot's state")) return "moved";
        }
        await this.#pollStatuses();
        if (this.#nextPivot !== undefined) continue;
        lacking.clear();
      }
      await this.#sleep(this.#opts.retryDelayMs);
    }
  }

  async #stateItems(
    engine: SnapStateSync,
    peer: string,
    items: readonly SnapStateItem[],
    lacking: Set<string>,
  ): Promise<void> {
    let answers: Uint8Array[];
    try {
      answers = await this.#request(
        peer,
        Protocol.STATE_ITEMS,
        items.map((item) => ({ hash: item.hash, code: item.code })),
      );
    } catch (err) {
      this.#log.debug("Snap sync: state items not received", { peer, error: String(err) });
      await engine.release(items);
      return;
    }
    const answered = items.slice(0, answers.length);
    if (answers.length < items.length) await engine.release(items.slice(answers.length));
    if (answered.length === 0) {
      lacking.add(peer);
      return;
    }
    const found = answers.map((bytes) => (bytes.length === 0 ? undefined : bytes));
    const outcome = await engine.deliver(answered, found);
    if (!outcome.ok) {
      await engine.release(answered);
      this.#reportBad(peer, PeerEvent.INVALID_MESSAGE, `state items: ${outcome.reason}`);
      return;
    }
    if (outcome.written === 0) lacking.add(peer);
    else {
      lacking.delete(peer);
      this.#rate.add(outcome.written);
    }
  }

  // --- the pivot block ----------------------------------------------------------------------

  /**
   * Fetches the pivot block's body and receipts and installs the snapshot; a peer whose body
   * or receipts do not check is reported and another asked. False when stopped.
   */
  async #pivotBlock(header: BlockHeader): Promise<boolean> {
    const hash = headerHash(header);
    const tried = new Set<string>();
    for (;;) {
      if (this.#stopped) return false;
      const peer = this.#pickPeer(header.number, 2, tried);
      if (peer === undefined) {
        tried.clear();
        await this.#sleep(this.#opts.retryDelayMs);
        continue;
      }
      tried.add(peer);
      let block: Block;
      let receipts: Receipt[];
      try {
        const [body] = await this.#request(peer, Protocol.BODIES_BY_HASH, [hash]);
        if (body === undefined) continue;
        const [list] = await this.#request(peer, Protocol.RECEIPTS_BY_HASH, [hash]);
        if (list === undefined) continue;
        block = { header, transactions: body.transactions, uncles: body.uncles };
        receipts = list;
      } catch (err) {
        this.#log.debug("Snap sync: pivot block not received", { peer, error: String(err) });
        continue;
      }
      if (receipts.length !== block.transactions.length) {
        this.#reportBad(
          peer,
          PeerEvent.INVALID_BLOCK,
          `${receipts.length} receipts for the ${block.transactions.length} transactions of block ${header.number}`,
        );
        continue;
      }
      const why = await this.#chain.installSnapshot(block, receipts);
      if (why === undefined) return true;
      this.#reportBad(peer, PeerEvent.INVALID_BLOCK, `pivot block ${header.number}: ${why}`);
    }
  }

  // --- waiting and progress -----------------------------------------------------------------

  /** Resolves after `ms`, or sooner when woken. */
  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleepers.add(done);
    });
  }

  /** Wakes every sleeper. */
  #wake(): void {
    for (const done of [...this.#sleepers]) done();
  }

  /**
   * Runs `work` as one of `requests`; the loop is woken when it ends. A failure of the chain or
   * the engine in it is kept for the loop to throw (`#check`).
   */
  #spawn(requests: Set<Promise<void>>, work: Promise<void>): void {
    const job = work
      .catch((error: unknown) => {
        this.#failure ??= { error };
      })
      .finally(() => {
        requests.delete(job);
        this.#wake();
      });
    requests.add(job);
  }

  /** Throws the failure kept by `#spawn`, if any. */
  #check(): void {
    if (this.#failure !== undefined) {
      const { error } = this.#failure;
      this.#failure = undefined;
      throw error;
    }
  }

  #eta(progress: SnapProgress): number | undefined {
    const rate = this.#rate.perSecond();
    if (rate === undefined || rate <= 0) return undefined;
    if (progress.phase === "blocks") return undefined;
    const left =
      progress.phase === "headers"
        ? progress.headers.total - progress.headers.done
        : progress.state.pending;
    return Math.round(left / rate);
  }

  #logProgress(): void {
    const progress = this.progress();
    if (progress === undefined) return;
    this.#log.info("Snap sync progress", {
      phase: progress.phase,
      pivot: progress.pivot,
      highest: progress.highestBlock,
      headers: `${progress.headers.done}/${progress.headers.total}`,
      ...progress.state,
      peers: this.#network.peers().length,
      secondsLeft: progress.etaSeconds ?? null,
    });
  }
}

/** Counts per second over the last half minute. */
class RecentRate {
  static readonly WINDOW_MS = 30_000;
  #samples: { at: number; count: number }[] = [];

  add(count: number): void {
    const now = Date.now();
    this.#samples.push({ at: now, count });
    while (this.#samples.length > 0 && now - this.#samples[0]!.at > RecentRate.WINDOW_MS)
      this.#samples.shift();
  }

  reset(): void {
    this.#samples = [];
  }

  perSecond(): number | undefined {
    if (this.#samples.length < 2) return undefined;
    const span = Date.now() - this.#samples[0]!.at;
    if (span <= 0) return undefined;
    const total = this.#samples.reduce((sum, s) => sum + s.count, 0);
    return (total * 1000) / span;
  }
}

function addTo(map: Map<bigint, Set<string>>, key: bigint, peer: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(peer);
  map.set(key, set);
}

function minNumber(a: number, b: bigint): number {
  return b < BigInt(a) ? Number(b) : a;
}

function checkOptions(opts: SnapSyncOptions): void {
  const atLeast = (
    name: Exclude<keyof SnapSyncOptions, "peerBudget">,
    min: number,
    max = Number.MAX_SAFE_INTEGER,
  ) => {
    const value = opts[name];
    if (!Number.isSafeInteger(value) || value < min || value > max)
      throw new RangeError(
        `snap sync option ${name} must be an integer from ${min} to ${max}, got ${value}`,
      );
  };
  atLeast("pivotDistance", 0);
  atLeast("pivotMaxLag", 1);
  atLeast("minSnapDistance", opts.pivotDistance + 1);
  atLeast("headersPerRequest", 1, MAX_HEADERS_PER_REQUEST);
  atLeast("itemsPerRequest", 1, MAX_STATE_ITEMS_PER_REQUEST);
  atLeast("parallelRequests", 1);
  atLeast("requestTimeoutMs", 1);
  const budget = opts.peerBudget;
  if (!(budget.capacity >= opts.headersPerRequest) || !(budget.refillPerSecond > 0))
    throw new RangeError(
      `snap sync option peerBudget needs a capacity of at least a request (${opts.headersPerRequest} headers) and a positive refill, got ${budget.capacity} and ${budget.refillPerSecond}`,
    );
  atLeast("statusPollMs", 1);
  atLeast("retryDelayMs", 1);
  atLeast("progressLogMs", 1);
}
