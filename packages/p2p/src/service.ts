import { join } from "node:path";
import type { GossipSub } from "@libp2p/gossipsub";
import { gossipsub } from "@libp2p/gossipsub";
import { peerIdFromString } from "@libp2p/peer-id";
import type { Chain, HeadChange } from "@nodex/chain";
import type { TxAdmission } from "@nodex/txpool";
import { type BlockHeader, bytesToHex, type Logger } from "@nodex/types";
import { chainHead, chainSourceOf } from "./chainSource.js";
import { P2PErrorCode } from "./errors.js";
import { Gossip, messageId } from "./gossip.js";
import { type ConnectionFailure, P2PNetwork, type PeerFault, type PeerInfo } from "./network.js";
import { NodeKey } from "./nodeKey.js";
import { defaultP2POptions, type P2POptions } from "./options.js";
import { loadBans, PeerEvent, PeerScoring, saveBans } from "./scoring/index.js";
import { type SnapChain, SnapSync, type SnapSyncOptions } from "./snapSync.js";
import { Synchronizer, type SyncOptions, type SyncProgress } from "./sync.js";

/** The ban list's file in the datadir. */
export const BANS_FILE = "p2p-bans.json";

/** What the node checks of a header's proof before it relays or fetches more. */
export type SealCheck = (
  header: BlockHeader,
  pending: ReadonlyMap<string, BlockHeader>,
) => Promise<string | undefined>;

export interface P2PServiceDeps {
  readonly datadir: string;
  readonly chain: Chain;
  readonly admission: TxAdmission;
  /**
   * Where transactions from the network go; `admission.admit` by default. A node that
   * automines hands them to its producer, which mines them as it mines a user's.
   */
  readonly submit?: (raw: Uint8Array) => Promise<unknown>;
  /** Why a header's proof of work and merged-mining proof are invalid, or `undefined`. */
  readonly checkSeal: SealCheck;
  readonly logger: Logger;
  /**
   * Snapshot sync first (`--sync-mode snap`): the chain side of it and its options. Full sync
   * starts once the snapshot is installed, or at once when snap sync answers `full`.
   */
  readonly snap?: { readonly chain: SnapChain; readonly options?: Partial<SnapSyncOptions> };
}

/** Gossipsub as Nodex nodes run it: unsigned messages identified by the keccak256 of their data. */
export function gossipService() {
  return gossipsub({
    globalSignaturePolicy: "StrictNoSign",
    msgIdFn: messageId,
    allowPublishToZeroTopicPeers: true,
    ignoreDuplicatePublishError: true,
    emitSelf: false,
  });
}

/** `net_peerList`'s short id: the first 8 hex digits of the peer's public key. */
export function shortPeerId(id: string): string {
  try {
    const key = peerIdFromString(id).publicKey;
    if (key !== undefined) return bytesToHex(key.raw).slice(2, 10);
  } catch {
    // Not a peer id: shown as it is.
  }
  return id.slice(0, 8);
}

/** How the scoring counts a peer's fault. */
function faultEvent(fault: PeerFault): PeerEvent {
  switch (fault.error.code) {
    case P2PErrorCode.TIMEOUT:
      return PeerEvent.TIMEOUT_MESSAGE;
    case P2PErrorCode.STATUS_MISMATCH:
      return PeerEvent.INVALID_NETWORK;
    case P2PErrorCode.STREAM_CLOSED:
    case P2PErrorCode.DIAL_FAILED:
    case P2PErrorCode.REMOTE_ERROR:
      return PeerEvent.UNEXPECTED_MESSAGE;
    case P2PErrorCode.RATE_LIMITED:
      // Over our limit: a flood. Refused by the peer for going over its limit: ours to slow.
      return fault.direction === "inbound"
        ? PeerEvent.INVALID_MESSAGE
        : PeerEvent.UNEXPECTED_MESSAGE;
    default:
      return PeerEvent.INVALID_MESSAGE;
  }
}

/** The IP address of a multiaddr such as `/ip4/127.0.0.2/tcp/5050/p2p/…`. */
function hostPort(multiaddr: string): { host: string; port: string } | undefined {
  const m = /^\/ip[46]\/([^/]+)\/tcp\/(\d+)/.exec(multiaddr);
  return m === null ? undefined : { host: m[1]!, port: m[2]! };
}

/**
 * The node on the network: libp2p with the status handshake and request protocols, gossip of
 * blocks and transactions, sync, and the reference node's peer scoring with bans that outlive
 * restarts. A peer whose reputation turns bad is disconnected and its address refused for the
 * punishment's time.
 */
export class P2PService {
  readonly network: P2PNetwork;
  readonly scoring: PeerScoring;
  readonly sync: Synchronizer;
  readonly gossip: Gossip;
  /** The snapshot sync that runs before full sync, when the deps ask for one. */
  readonly snap: SnapSync | undefined;
  readonly #deps: P2PServiceDeps;
  /** The snapshot sync's run, while it runs. */
  #snapping: Promise<void> | undefined;
  readonly #log: Logger;
  readonly #unsubscribe: (() => void)[] = [];

  private constructor(
    deps: P2PServiceDeps,
    network: P2PNetwork,
    scoring: PeerScoring,
    sync: Synchronizer,
    gossip: Gossip,
    snap: SnapSync | undefined,
  ) {
    this.#deps = deps;
    this.#log = deps.logger;
    this.network = network;
    this.scoring = scoring;
    this.sync = sync;
    this.gossip = gossip;
    this.snap = snap;
  }

  static async create(
    options: Partial<P2POptions> & Pick<P2POptions, "networkId">,
    deps: P2PServiceDeps,
    syncOptions: Partial<SyncOptions> = {},
  ): Promise<P2PService> {
    const log = deps.logger;
    const bansPath = join(deps.datadir, BANS_FILE);
    const scoring = new PeerScoring(
      {
        failedConnections: options.failedConnections ?? defaultP2POptions.failedConnections,
        onBansChanged: (state) => {
          try {
            saveBans(bansPath, state);
          } catch (err) {
            log.error("Could not write the ban list", { file: bansPath, err: String(err) });
          }
        },
      },
      loadBans(bansPath, log),
    );
    const key = await NodeKey.loadOrCreate(deps.datadir, log);
    const network = await P2PNetwork.create(options, {
      key,
      chain: await chainSourceOf(deps.chain),
      logger: log,
      isBanned: (ip) => scoring.isBanned(ip),
      services: { pubsub: gossipService() },
    });
    let service: P2PService | undefined;
    const report = (peer: string, event: PeerEvent, reason?: string) =>
      service?.report(peer, event, reason);
    const chain = deps.chain;
    const sync = new Synchronizer(
      network,
      {
        head: () => chainHead(chain),
        // A snapshot, once installed, moves the chain's first block.
        get firstNumber() {
          return chain.firstBlock.number;
        },
        canonicalHash: (number) => chain.getCanonicalHash(number),
        checkSeal: deps.checkSeal,
        importBlock: (block) => chain.importBlock(block),
      },
      { logger: log.child({ module: "sync" }), report },
      syncOptions,
    );
    const gossip = new Gossip({
      pubsub: (network.libp2p.services as unknown as { pubsub: GossipSub }).pubsub,
      networkId: options.networkId,
      chain: {
        hasBlock: async (hash) => (await chain.getHeaderByHash(hash)) !== undefined,
        hasParent: async (header) => (await chain.getHeaderByHash(header.parentHash)) !== undefined,
        checkSeal: (header) => deps.checkSeal(header, new Map()),
        importBlock: (block) => chain.importBlock(block),
      },
      pool: { admit: deps.submit ?? ((raw) => deps.admission.admit(raw)) },
      logger: log.child({ module: "gossip" }),
      report,
      // While the snapshot is made, full sync waits: it starts from the snapshot.
      onUnknownParent: (peer) => {
        if (!service?.snapping) void sync.unknownBlock(peer);
      },
    });
    const snap =
      deps.snap === undefined
        ? undefined
        : new SnapSync(
            network,
            deps.snap.chain,
            { logger: log.child({ module: "snap" }), report },
            deps.snap.options,
          );
    service = new P2PService(deps, network, scoring, sync, gossip, snap);
    return service;
  }

  async start(): Promise<void> {
    const { network } = this;
    this.#unsubscribe.push(
      network.onPeerConnected((peer) => this.#connected(peer)),
      network.onPeerFault((fault) => this.#fault(fault)),
      network.onConnectionFailure((failure) => this.#connectionFailed(failure)),
      this.#deps.chain.onHeadChange((change) => this.#headChanged(change)),
      this.#deps.admission.onAdmitted((tx) => void this.gossip.publishTransaction(tx)),
    );
    await network.start();
    this.gossip.start();
    if (this.snap === undefined) this.sync.start();
    else this.#snapping = this.#snapThenSync(this.snap);
  }

  /** Whether the snapshot sync runs (full sync waits for it). */
  get snapping(): boolean {
    return this.#snapping !== undefined;
  }

  /**
   * Runs the snapshot sync, then full sync from its pivot (or from the head, when snap answers
   * `full`). A failed snapshot sync is logged and leaves full sync off: its chain may hold part
   * of a state, and a restart resumes it.
   */
  async #snapThenSync(snap: SnapSync): Promise<void> {
    try {
      const outcome = await snap.run();
      if (outcome.result === "stopped") return;
      this.#snapping = undefined;
      this.sync.start();
    } catch (err) {
      this.#log.error("Snap sync failed; restart the node to resume it", {
        error: (err as Error)?.message ?? String(err),
        stack: (err as Error)?.stack,
      });
    } finally {
      this.#snapping = undefined;
    }
  }

  async stop(): Promise<void> {
    for (const stop of this.#unsubscribe.splice(0)) stop();
    await this.snap?.stop();
    await this.#snapping;
    await this.sync.stop();
    this.gossip.stop();
    await this.network.stop();
  }

  /** Records what a peer did; disconnects it when its reputation turned bad. */
  report(peer: string, event: PeerEvent, reason?: string): void {
    const info = this.network.peer(peer);
    const address = info === undefined ? undefined : hostPort(info.remoteAddress)?.host;
    const outcome = this.scoring.record(shortPeerId(peer), address, event);
    if (!outcome.punished) return;
    if (outcome.started)
      this.#log.warn("Banning peer: bad reputation", {
        peer,
        address,
        event,
        reason,
        until: new Date(outcome.until ?? 0).toISOString(),
      });
    void this.network.disconnect(peer, `bad reputation (${event})`).catch(() => {});
  }

  /** Disconnects the connected peers whose address is banned (after a ban by hand). */
  /**
   * Reads the ban list in the datadir again and makes it the node's bans (the operator edited
   * the file, then sent SIGHUP); peers the new list bans are disconnected. Returns what it holds.
   */
  reloadBans(): { manual: number; punished: number } {
    const state = loadBans(join(this.#deps.datadir, BANS_FILE), this.#log);
    this.scoring.reloadBans(state);
    this.dropBanned("address banned by the operator");
    return { manual: state.manual.length, punished: state.punished.length };
  }

  dropBanned(reason: string): void {
    for (const peer of this.network.peers()) {
      const address = hostPort(peer.remoteAddress)?.host;
      if (address !== undefined && this.scoring.isBanned(address))
        void this.network.disconnect(peer.id, reason).catch(() => {});
    }
  }

  /** `net_peerList`: `"<short id> | <host>:<port>"` per connected peer. */
  peerList(): string[] {
    return this.network.peers().map((peer) => {
      const at = hostPort(peer.remoteAddress);
      return `${shortPeerId(peer.id)} | ${at === undefined ? peer.remoteAddress : `${at.host}:${at.port}`}`;
    });
  }

  /** `eth_syncing`: full sync's progress; during a snapshot sync, from the chain's head to the best peer's. */
  syncing(): SyncProgress {
    const snap = this.#snapping === undefined ? undefined : this.snap?.progress();
    if (snap !== undefined) {
      const head = chainHead(this.#deps.chain).number;
      const { state } = snap;
      return {
        startingBlock: head,
        currentBlock: head,
        highestBlock: snap.highestBlock,
        snap: {
          phase: snap.phase,
          pivotBlock: snap.pivot,
          headers: BigInt(snap.headers.done),
          accounts: BigInt(state.accounts),
          slots: BigInt(state.slots),
          codes: BigInt(state.codes),
          nodes: BigInt(state.nodes),
          pending: BigInt(state.pending),
          bytes: BigInt(state.bytes),
          ...(snap.etaSeconds === undefined ? {} : { secondsLeft: snap.etaSeconds }),
        },
      };
    }
    return this.sync.progress();
  }

  /** `debug_wireProtocolQueueSize`: gossiped blocks waiting to be imported. */
  queueSize(): number {
    return this.gossip.pendingImports;
  }

  #connected(peer: PeerInfo): void {
    this.report(peer.id, PeerEvent.SUCCESSFUL_HANDSHAKE);
    // A connection from a banned address the gater let through before the ban: drop it.
    const address = hostPort(peer.remoteAddress)?.host;
    if (address !== undefined && this.scoring.isBanned(address))
      void this.network.disconnect(peer.id, "banned address").catch(() => {});
  }

  /**
   * An inbound connection that never became a peer counts against its address; at the limit the
   * address is banned and whatever it still has open is closed.
   */
  #connectionFailed(failure: ConnectionFailure): void {
    const outcome = this.scoring.failedConnection(failure.address);
    if (!outcome.started) return;
    this.#log.warn("Banning address: failed connections", {
      address: failure.address,
      failures: outcome.failures,
      stage: failure.stage,
      reason: failure.reason,
      until: new Date(outcome.until ?? 0).toISOString(),
    });
    this.network.dropPending(failure.address);
    this.dropBanned("banned address: failed connections");
  }

  #fault(fault: PeerFault): void {
    this.report(fault.peer, faultEvent(fault), fault.error.message);
  }

  #headChanged(change: HeadChange): void {
    // Blocks that arrive by sync are the network's already; announce the rest (made here, or
    // submitted by a miner), the newest few.
    if (this.sync.progress() !== false || this.#snapping !== undefined) return;
    for (const stored of change.added.slice(-16)) void this.gossip.publishBlock(stored.block);
  }
}
