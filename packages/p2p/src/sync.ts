import type { ImportResult } from "@nodex/chain";
import {
  type Block,
  type BlockHeader,
  bytesToHex,
  equalBytes,
  headerHash,
  type Logger,
} from "@nodex/types";
import type { ChainHead } from "./chainSource.js";
import { P2PError, P2PErrorCode } from "./errors.js";
import type { PeerInfo, RequestOptions } from "./network.js";
import {
  MAX_BODIES_PER_REQUEST,
  MAX_HEADERS_PER_REQUEST,
  type RequestProtocol,
  type RequestTypes,
} from "./protocols.js";
import { PeerEvent } from "./scoring/index.js";
import type { Status } from "./status.js";

/** The local chain as sync sees it. */
export interface SyncChain {
  head(): ChainHead;
  /**
   * The number of the chain's first block (genesis, or an anchor), shared by every peer the
   * handshake lets in; 0 when absent.
   */
  readonly firstNumber?: bigint;
  canonicalHash(number: bigint): Promise<Uint8Array | undefined>;
  /**
   * Why `header` carries no valid proof of work and merged-mining proof, or `undefined`.
   * `pending` holds headers not stored yet that it may descend from (by hex hash).
   */
  checkSeal(
    header: BlockHeader,
    pending: ReadonlyMap<string, BlockHeader>,
  ): Promise<string | undefined>;
  importBlock(block: Block): Promise<ImportResult>;
}

/** The parts of the network sync uses (`P2PNetwork` has them). */
export interface SyncNetwork {
  peers(): PeerInfo[];
  peer(id: string): PeerInfo | undefined;
  onPeerConnected(listener: (peer: PeerInfo) => void): () => void;
  refreshStatus(peer: string): Promise<Status>;
  request<P extends RequestProtocol>(
    peer: string,
    protocol: P,
    req: RequestTypes[P]["request"],
    opts?: RequestOptions,
  ): Promise<RequestTypes[P]["response"]>;
}

/** What a peer did, for the scoring. */
export type PeerReport = (peer: string, event: PeerEvent, reason?: string) => void;

/** `eth_syncing`'s answer: `false`, or where a sync started, stands and goes. */
export type SyncProgress =
  | false
  | {
      readonly startingBlock: bigint;
      readonly currentBlock: bigint;
      readonly highestBlock: bigint;
      /** During a snapshot sync: its phase and what it has done. */
      readonly snap?: SnapSyncProgress;
    };

/** Where a snapshot sync stands, as `eth_syncing` shows it. */
export interface SnapSyncProgress {
  readonly phase: "headers" | "state" | "blocks";
  readonly pivotBlock: bigint;
  /** Headers stored, from genesis. */
  readonly headers: bigint;
  readonly accounts: bigint;
  readonly slots: bigint;
  readonly codes: bigint;
  /** Trie nodes downloaded, and known to be wanted still. */
  readonly nodes: bigint;
  readonly pending: bigint;
  /** Bytes of state written. */
  readonly bytes: bigint;
  /** Seconds left at the recent rate, when known. */
  readonly secondsLeft?: number;
}

export interface SyncOptions {
  /** How often peers are asked for their head when nothing else prompts a sync. */
  readonly pollMs: number;
  /** How often progress is logged while syncing. */
  readonly progressLogMs: number;
}

export const DEFAULT_SYNC_OPTIONS: SyncOptions = { pollMs: 3_000, progressLogMs: 5_000 };

/** A peer that answered something sync cannot use: it is reported and sync moves on. */
class BadPeer extends Error {
  constructor(
    readonly event: PeerEvent,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Brings the chain to the heaviest head among the peers: finds the last block shared with the
 * peer of the highest total difficulty, fetches the headers after it (checking their chain and
 * their proofs of work before anything else), then the bodies, and imports the blocks in order
 * (each written atomically by the chain). A restart resumes from the local head. Also follows
 * the network: a gossiped block with an unknown parent or a heavier status starts a sync from
 * that peer. Peers that answer invalid headers or blocks are reported.
 */
export class Synchronizer {
  readonly #network: SyncNetwork;
  readonly #chain: SyncChain;
  readonly #log: Logger;
  readonly #report: PeerReport;
  readonly #opts: SyncOptions;
  readonly #listeners = new Set<(progress: SyncProgress) => void>();
  readonly #unsubscribe: (() => void)[] = [];
  #running: Promise<void> | undefined;
  /** Peers to sync from next, with the reason. */
  readonly #wanted = new Set<string>();
  #progress: SyncProgress = false;
  #poll: ReturnType<typeof setInterval> | undefined;
  #stopped = false;

  constructor(
    network: SyncNetwork,
    chain: SyncChain,
    deps: { logger: Logger; report?: PeerReport },
    opts: Partial<SyncOptions> = {},
  ) {
    this.#network = network;
    this.#chain = chain;
    this.#log = deps.logger;
    this.#report = deps.report ?? (() => {});
    this.#opts = { ...DEFAULT_SYNC_OPTIONS, ...opts };
  }

  start(): void {
    this.#stopped = false;
    this.#unsubscribe.push(this.#network.onPeerConnected((peer) => this.consider(peer.id)));
    this.#poll = setInterval(() => this.#pollPeers(), this.#opts.pollMs);
    this.#poll.unref();
    for (const peer of this.#network.peers()) this.consider(peer.id);
  }

  /** Stops after the block being imported. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#poll !== undefined) clearInterval(this.#poll);
    for (const stop of this.#unsubscribe.splice(0)) stop();
    await this.#running;
  }

  /** Where the current sync stands; `false` when none runs. */
  progress(): SyncProgress {
    return this.#progress;
  }

  onProgress(listener: (progress: SyncProgress) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Syncs from `peer` if its last status is heavier than the local head. */
  consider(peer: string): void {
    if (this.#stopped) return;
    this.#wanted.add(peer);
    this.#running ??= this.#loop().finally(() => {
      this.#running = undefined;
      this.#setProgress(false);
    });
  }

  /** A peer showed a block the chain cannot place: ask for its head, then sync from it. */
  async unknownBlock(peer: string): Promise<void> {
    try {
      await this.#network.refreshStatus(peer);
    } catch {
      return;
    }
    this.consider(peer);
  }

  async #pollPeers(): Promise<void> {
    for (const peer of this.#network.peers()) {
      if (this.#stopped) return;
      try {
        const status = await this.#network.refreshStatus(peer.id);
        if (status.totalDifficulty > this.#chain.head().totalDifficulty) this.consider(peer.id);
      } catch {
        // A peer that does not answer is the network's and the scoring's business.
      }
    }
  }

  async #loop(): Promise<void> {
    while (!this.#stopped && this.#wanted.size > 0) {
      const candidates = [...this.#wanted]
        .map((id) => this.#network.peer(id))
        .filter((p): p is PeerInfo => p !== undefined);
      this.#wanted.clear();
      const local = this.#chain.head().totalDifficulty;
      const best = candidates
        .filter((p) => p.status.totalDifficulty > local)
        .sort((a, b) => (b.status.totalDifficulty > a.status.totalDifficulty ? 1 : -1))[0];
      if (best === undefined) continue;
      try {
        await this.#syncFrom(best);
      } catch (err) {
        if (err instanceof BadPeer) {
          this.#log.warn("Sync stopped: the peer answered what the chain cannot take", {
            peer: best.id,
            reason: err.message,
          });
          this.#report(best.id, err.event, err.message);
        } else if (err instanceof P2PError) {
          this.#log.info("Sync from a peer stopped", { peer: best.id, reason: err.message });
        } else {
          this.#log.error("Sync failed", { peer: best.id, err: String(err) });
        }
      }
    }
  }

  async #syncFrom(peer: PeerInfo): Promise<void> {
    const id = peer.id;
    let ancestor = await this.#commonAncestor(id, peer.status.bestNumber);
    const startingBlock = this.#chain.head().number;
    let highest = peer.status.bestNumber;
    const started = Date.now();
    let imported = 0;
    let lastLog = started;
    this.#setProgress({ startingBlock, currentBlock: startingBlock, highestBlock: highest });
    this.#log.info("Syncing", { peer: id, from: ancestor + 1n, to: highest });
    while (!this.#stopped) {
      // Ask for what the peer said it has, no more: a peer that keeps mining would otherwise be
      // asked for a full batch per new block (and its rate limit would take that for a flood).
      // Caught up with what it said, ask again; gossip brings what comes after.
      if (ancestor >= highest) {
        highest = (await this.#network.refreshStatus(id)).bestNumber;
        if (ancestor >= highest) break;
      }
      const wanted = highest - ancestor;
      const headers = await this.#network.request(id, "headers_by_range", {
        start: ancestor + 1n,
        count: wanted < BigInt(MAX_HEADERS_PER_REQUEST) ? Number(wanted) : MAX_HEADERS_PER_REQUEST,
      });
      if (headers.length === 0) break;
      const parentHash = await this.#chain.canonicalHash(ancestor);
      if (parentHash === undefined || !equalBytes(headers[0]!.parentHash, parentHash)) {
        // The peer's chain moved under us (a reorganization on its side): find the fork again.
        ancestor = await this.#commonAncestor(
          id,
          (await this.#network.refreshStatus(id)).bestNumber,
        );
        continue;
      }
      await this.#checkSeals(headers);
      const blocks = await this.#bodies(id, headers);
      for (const block of blocks) {
        const outcome = await this.#chain.importBlock(block);
        if (outcome.result === "INVALID_BLOCK")
          throw new BadPeer(PeerEvent.INVALID_BLOCK, outcome.reason);
        if (outcome.result === "NO_PARENT")
          throw new BadPeer(PeerEvent.INVALID_BLOCK, outcome.reason);
        if (outcome.result !== "EXIST") {
          imported++;
          this.#report(id, PeerEvent.VALID_BLOCK);
        }
      }
      ancestor = headers[headers.length - 1]!.number;
      const head = this.#chain.head();
      if (ancestor > highest) highest = ancestor;
      this.#setProgress({ startingBlock, currentBlock: head.number, highestBlock: highest });
      const now = Date.now();
      if (now - lastLog >= this.#opts.progressLogMs) {
        lastLog = now;
        const rate = (imported * 1000) / Math.max(1, now - started);
        const left = Number(highest - head.number);
        this.#log.info("Sync progress", {
          current: head.number,
          highest,
          blocksPerSecond: Math.round(rate * 10) / 10,
          secondsLeft: rate > 0 ? Math.round(left / rate) : null,
        });
      }
    }
    const head = this.#chain.head();
    this.#log.info("Synced", {
      peer: id,
      head: head.number,
      imported,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    });
  }

  /**
   * The highest block number both chains share: steps back from the lower of the two heads,
   * doubling the step, then bisects. The first block (genesis, or an anchor) is shared by every
   * peer the handshake lets in.
   */
  async #commonAncestor(peer: string, peerHead: bigint): Promise<bigint> {
    const local = this.#chain.head().number;
    const first = this.#chain.firstNumber ?? 0n;
    let high = local < peerHead ? local : peerHead;
    if (await this.#shares(peer, high)) return high;
    let step = 1n;
    let low = high;
    for (;;) {
      low = high - step > first ? high - step : first;
      if (low === first || (await this.#shares(peer, low))) break;
      high = low;
      step *= 2n;
    }
    // low is shared, high is not: bisect.
    while (high - low > 1n) {
      const mid = (low + high) / 2n;
      if (await this.#shares(peer, mid)) low = mid;
      else high = mid;
    }
    return low;
  }

  async #shares(peer: string, number: bigint): Promise<boolean> {
    if (number <= (this.#chain.firstNumber ?? 0n)) return true;
    const ours = await this.#chain.canonicalHash(number);
    const [theirs] = await this.#network.request(peer, "headers_by_range", {
      start: number,
      count: 1,
    });
    return ours !== undefined && theirs !== undefined && equalBytes(headerHash(theirs), ours);
  }

  async #checkSeals(headers: readonly BlockHeader[]): Promise<void> {
    const pending = new Map<string, BlockHeader>();
    for (const header of headers) {
      const why = await this.#chain.checkSeal(header, pending);
      if (why !== undefined)
        throw new BadPeer(
          PeerEvent.INVALID_HEADER,
          `header ${header.number} ${bytesToHex(headerHash(header))}: ${why}`,
        );
      pending.set(bytesToHex(headerHash(header)), header);
    }
  }

  /** The blocks of `headers`: their bodies asked for in batches, each answer possibly a prefix. */
  async #bodies(peer: string, headers: readonly BlockHeader[]): Promise<Block[]> {
    const blocks: Block[] = [];
    while (blocks.length < headers.length) {
      const batch = headers.slice(blocks.length, blocks.length + MAX_BODIES_PER_REQUEST);
      const bodies = await this.#network.request(
        peer,
        "bodies_by_hash",
        batch.map((h) => headerHash(h)),
      );
      // An empty answer: the peer's answer broke off, or it lost the block to a reorganization
      // since it sent the header. Not proof of bad faith: stop syncing from it for now.
      if (bodies.length === 0)
        throw new P2PError(
          P2PErrorCode.STREAM_CLOSED,
          `no body for block ${batch[0]!.number} in the answer`,
        );
      for (let i = 0; i < bodies.length; i++)
        blocks.push({
          header: batch[i]!,
          transactions: bodies[i]!.transactions,
          uncles: bodies[i]!.uncles,
        });
    }
    return blocks;
  }

  #setProgress(progress: SyncProgress): void {
    const was = this.#progress;
    this.#progress = progress;
    if (was === false && progress === false) return;
    for (const listener of this.#listeners) listener(progress);
  }
}
