import {
  type GossipSub,
  type GossipsubMessage,
  type Message,
  TopicValidatorResult,
} from "@libp2p/gossipsub";
import type { ImportResult } from "@nodex/chain";
import { TxPoolError, TxPoolErrorCode } from "@nodex/txpool";
import {
  type Block,
  type BlockHeader,
  bytesToHex,
  DecodeError,
  decodeBlock,
  encodeBlock,
  headerHash,
  keccak256,
  type Logger,
  type SignedTransaction,
  TransactionError,
} from "@nodex/types";
import { PeerEvent } from "./scoring/index.js";
import type { PeerReport } from "./sync.js";

const ACCEPT = TopicValidatorResult.Accept;
const IGNORE = TopicValidatorResult.Ignore;
const REJECT = TopicValidatorResult.Reject;
type Verdict = TopicValidatorResult;

/** What gossip needs of the chain. */
export interface GossipChain {
  hasBlock(hash: Uint8Array): Promise<boolean>;
  /** Whether the block's parent is stored (then its proof of work can be checked). */
  hasParent(header: BlockHeader): Promise<boolean>;
  /** Why the header's proof of work and merged-mining proof are invalid, or `undefined`. */
  checkSeal(header: BlockHeader): Promise<string | undefined>;
  importBlock(block: Block): Promise<ImportResult>;
}

/**
 * Where gossiped transactions go: the pool's one admission path (on a node that automines, the
 * producer's, so that a transaction from the network gets its block as one from a user does).
 */
export interface GossipPool {
  admit(raw: Uint8Array): Promise<unknown>;
}

export interface GossipDeps {
  readonly pubsub: GossipSub;
  readonly networkId: number;
  readonly chain: GossipChain;
  readonly pool: GossipPool;
  readonly logger: Logger;
  readonly report?: PeerReport;
  /** A block whose parent is unknown came from `peer`: sync from it. */
  readonly onUnknownParent?: (peer: string) => void;
}

export function blockTopic(networkId: number): string {
  return `/nodex/${networkId}/blocks/1`;
}
export function transactionTopic(networkId: number): string {
  return `/nodex/${networkId}/transactions/1`;
}

/** Message ids are the keccak256 of the data: the same block or transaction is one message. */
export function messageId(msg: Message): Uint8Array {
  return keccak256(msg.data);
}

const SEEN_LIMIT = 4096;

/**
 * Gossip of new blocks and transactions over gossipsub. A block is relayed only once its proof
 * of work and merged-mining proof check out (nothing else runs before that), then imported; a
 * transaction only once the pool's admission took it. Invalid ones are rejected and their
 * sender reported; what is merely known or stale is ignored.
 */
export class Gossip {
  readonly #deps: GossipDeps;
  readonly #blocks: string;
  readonly #transactions: string;
  readonly #log: Logger;
  readonly #report: PeerReport;
  #importing = 0;
  /** Hashes heard from the network or published: not published (again). */
  readonly #seen = new Set<string>();

  constructor(deps: GossipDeps) {
    this.#deps = deps;
    this.#blocks = blockTopic(deps.networkId);
    this.#transactions = transactionTopic(deps.networkId);
    this.#log = deps.logger;
    this.#report = deps.report ?? (() => {});
  }

  start(): void {
    const { pubsub } = this.#deps;
    pubsub.topicValidators.set(this.#blocks, (peer, msg) =>
      this.#validateBlock(peer.toString(), msg),
    );
    pubsub.topicValidators.set(this.#transactions, (peer, msg) =>
      this.#validateTransaction(peer.toString(), msg),
    );
    pubsub.addEventListener("gossipsub:message", this.#onMessage);
    pubsub.subscribe(this.#blocks);
    pubsub.subscribe(this.#transactions);
  }

  stop(): void {
    const { pubsub } = this.#deps;
    pubsub.removeEventListener("gossipsub:message", this.#onMessage);
    pubsub.topicValidators.delete(this.#blocks);
    pubsub.topicValidators.delete(this.#transactions);
  }

  /** Announces a block made or received here (not one heard from gossip). */
  async publishBlock(block: Block): Promise<void> {
    const hash = bytesToHex(headerHash(block.header));
    if (!this.#see(hash)) return;
    await this.#publish(this.#blocks, encodeBlock(block), "block", hash);
  }

  /** Announces a transaction the pool took from a user (not one heard from gossip). */
  async publishTransaction(tx: SignedTransaction): Promise<void> {
    const hash = bytesToHex(tx.hash);
    if (!this.#see(hash)) return;
    await this.#publish(this.#transactions, tx.raw, "transaction", hash);
  }

  /** Gossiped blocks accepted and not imported yet. */
  get pendingImports(): number {
    return this.#importing;
  }

  /** Blocks sync imported: never announced. */
  markSeen(hash: Uint8Array): void {
    this.#see(bytesToHex(hash));
  }

  async #publish(topic: string, data: Uint8Array, what: string, hash: string): Promise<void> {
    try {
      await this.#deps.pubsub.publish(topic, data);
    } catch (err) {
      this.#log.debug(`Could not gossip a ${what}`, { hash, reason: String(err) });
    }
  }

  /** Records `hash` as seen; `false` when it was already. */
  #see(hash: string): boolean {
    if (this.#seen.has(hash)) return false;
    this.#seen.add(hash);
    if (this.#seen.size > SEEN_LIMIT) {
      const oldest = this.#seen.values().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
    return true;
  }

  async #validateBlock(peer: string, msg: Message): Promise<Verdict> {
    let block: Block;
    try {
      block = decodeBlock(msg.data);
    } catch (err) {
      this.#report(peer, PeerEvent.INVALID_MESSAGE, `undecodable block: ${String(err)}`);
      return REJECT;
    }
    const hash = headerHash(block.header);
    const hex = bytesToHex(hash);
    this.#see(hex);
    const { chain } = this.#deps;
    if (await chain.hasBlock(hash)) return IGNORE;
    if (!(await chain.hasParent(block.header))) {
      // Its proof of work cannot be checked without its ancestors: fetch them, relay nothing.
      this.#deps.onUnknownParent?.(peer);
      return IGNORE;
    }
    const why = await chain.checkSeal(block.header);
    if (why !== undefined) {
      this.#log.warn("Refused a gossiped block: invalid proof of work", {
        peer,
        number: block.header.number,
        hash: hex,
        reason: why,
      });
      this.#report(peer, PeerEvent.INVALID_BLOCK, why);
      return REJECT;
    }
    return ACCEPT;
  }

  async #validateTransaction(peer: string, msg: Message): Promise<Verdict> {
    try {
      await this.#deps.pool.admit(msg.data);
    } catch (err) {
      // Bytes that are no transaction, a bad signature, another chain: the sender's fault.
      // Known, stale, underpriced or refused by a block here: don't relay, blame no one.
      const invalid =
        err instanceof DecodeError ||
        err instanceof TransactionError ||
        (err instanceof TxPoolError && err.code === TxPoolErrorCode.CHAIN_ID_MISMATCH);
      if (!invalid) return IGNORE;
      this.#report(peer, PeerEvent.INVALID_TRANSACTION, (err as Error).message);
      return REJECT;
    }
    this.#see(bytesToHex(keccak256(msg.data)));
    this.#report(peer, PeerEvent.VALID_TRANSACTION);
    return ACCEPT;
  }

  /** Messages that passed their validator: blocks are imported. */
  readonly #onMessage = (evt: CustomEvent<GossipsubMessage>): void => {
    const { msg, propagationSource } = evt.detail;
    if (msg.topic !== this.#blocks) return;
    const block = decodeOrUndefined(msg.data);
    if (block === undefined) return;
    void this.#import(propagationSource.toString(), block, bytesToHex(headerHash(block.header)));
  };

  async #import(peer: string, block: Block, hash: string): Promise<void> {
    this.#importing++;
    const outcome = await this.#deps.chain
      .importBlock(block)
      .catch((err: unknown) => {
        this.#log.error("Importing a gossiped block failed", { hash, err: String(err) });
        return undefined;
      })
      .finally(() => {
        this.#importing--;
      });
    if (outcome === undefined) return;
    switch (outcome.result) {
      case "INVALID_BLOCK":
        this.#report(peer, PeerEvent.INVALID_BLOCK, outcome.reason);
        return;
      case "NO_PARENT":
        this.#deps.onUnknownParent?.(peer);
        return;
      case "EXIST":
        return;
      default:
        this.#report(peer, PeerEvent.VALID_BLOCK);
    }
  }
}

function decodeOrUndefined(data: Uint8Array): Block | undefined {
  try {
    return decodeBlock(data);
  } catch {
    return undefined;
  }
}
