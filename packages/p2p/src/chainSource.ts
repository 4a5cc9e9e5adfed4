import type { Chain } from "@nodex/chain";
import type { Block, BlockHeader, Receipt } from "@nodex/types";

/** A block's body as peers exchange it: its transactions and uncle headers. */
export type BlockBody = Pick<Block, "transactions" | "uncles">;

/**
 * A piece of a state asked of a peer by its keccak256 hash: a trie node (of the account trie or
 * a storage trie), or a contract's code (`code`). The same shape as `@nodex/state`'s
 * `StateItemRef`.
 */
export interface StateItemKey {
  readonly hash: Uint8Array;
  readonly code: boolean;
}

/** The best block as the status handshake tells it. */
export interface ChainHead {
  readonly hash: Uint8Array;
  readonly number: bigint;
  readonly totalDifficulty: bigint;
}

/** What the network serves to peers and tells them in the handshake: reads only. */
export interface ChainSource {
  /**
   * The chain's first block, which peers must share (the handshake's genesis hash): genesis,
   * or the anchor of an anchored chain.
   */
  readonly genesisHash: Uint8Array;
  head(): ChainHead;
  /** The canonical header at `number`. */
  headerByNumber(number: bigint): Promise<BlockHeader | undefined>;
  headerByHash(hash: Uint8Array): Promise<BlockHeader | undefined>;
  bodyByHash(hash: Uint8Array): Promise<BlockBody | undefined>;
  receiptsByHash(hash: Uint8Array): Promise<readonly Receipt[] | undefined>;
  /**
   * Trie nodes and code by hash, in order, `undefined` for one not held; a prefix of `items`
   * that stops before the item that would take the answer past `maxBytes` (the first is always
   * answered).
   */
  stateItems(
    items: readonly StateItemKey[],
    maxBytes: number,
  ): Promise<readonly (Uint8Array | undefined)[]>;
}

/** The chain's best block, as the handshake and sync tell it. */
export function chainHead(chain: Chain): ChainHead {
  const head = chain.head;
  return {
    hash: head.hash,
    number: head.block.header.number,
    totalDifficulty: head.totalDifficulty,
  };
}

/** A `ChainSource` over a `Chain`: its head, its canonical index and its block store. */
export async function chainSourceOf(chain: Chain): Promise<ChainSource> {
  // Genesis, or an anchor: a chain installed from a snapshot holds headers back to genesis.
  const genesisHash = await chain.getCanonicalHash(chain.firstBlock.headersFrom);
  if (genesisHash === undefined) throw new Error("the chain has no first block");
  return {
    genesisHash,
    head: () => chainHead(chain),
    headerByNumber: async (number) => {
      const hash = await chain.getCanonicalHash(number);
      return hash === undefined ? undefined : chain.getHeaderByHash(hash);
    },
    headerByHash: (hash) => chain.getHeaderByHash(hash),
    bodyByHash: async (hash) => {
      const stored = await chain.getBlockByHash(hash);
      return stored === undefined
        ? undefined
        : { transactions: stored.block.transactions, uncles: stored.block.uncles };
    },
    receiptsByHash: (hash) => chain.getReceipts(hash),
    stateItems: (items, maxBytes) => chain.stateItems(items, maxBytes),
  };
}
