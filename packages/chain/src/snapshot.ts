import { orBloom } from "@nodex/evm";
import { orderedTrieRoot } from "@nodex/state";
import {
  type Block,
  type BlockHeader,
  bytesToBigintBE,
  encodeReceipt,
  equalBytes,
  type NetworkPreset,
  type Receipt,
  typedTransactionsActive,
  unclesHash,
} from "@nodex/types";
import { numberKey } from "./blockStore.js";

/**
 * A chain installed from a snapshot: the hash of its first full block (the pivot of a snapshot
 * sync), whose state was downloaded from peers. Absent for every other chain.
 */
export const SNAPSHOT_KEY = new TextEncoder().encode("snapshot");
/** The highest header of the header chain a snapshot sync has stored past the head (its hash). */
export const HEADER_TIP_KEY = new TextEncoder().encode("headerTip");
/** The pivot of a snapshot sync in progress: its number, 8 bytes big-endian. */
export const SNAP_PIVOT_KEY = new TextEncoder().encode("snapPivot");

export function encodePivot(number: bigint): Uint8Array {
  return numberKey(number);
}

export function decodePivot(bytes: Uint8Array): bigint {
  return bytesToBigintBE(bytes);
}

/**
 * Why `uncles` are not the uncles `header` names (their count and hash), or `undefined`. A
 * header chain counts its blocks' uncles in the total difficulty, so a header with uncles comes
 * with them.
 */
export function unclesMismatch(
  header: BlockHeader,
  uncles: readonly BlockHeader[] | undefined,
): string | undefined {
  if (header.uncleCount === 0) {
    return uncles === undefined || uncles.length === 0
      ? undefined
      : `${uncles.length} uncles given for a header without uncles`;
  }
  if (uncles === undefined)
    return `header ${header.number} has ${header.uncleCount} uncles: they must come with it`;
  if (uncles.length !== header.uncleCount)
    return `${uncles.length} uncles given, the header names ${header.uncleCount}`;
  if (!equalBytes(unclesHash(uncles), header.unclesHash))
    return "the uncles given do not match the header's uncles hash";
  return undefined;
}

/**
 * Why `block`'s transactions cannot be its header's: a typed one before typed transactions are
 * active, or a transactions root that is not the header's; `undefined` when they can. Import
 * and a snapshot's pivot check them alike.
 */
export async function transactionsMismatch(
  network: NetworkPreset,
  block: Block,
): Promise<string | undefined> {
  const { header, transactions } = block;
  if (!typedTransactionsActive(network, header.number)) {
    const typed = transactions.findIndex((tx) => tx.type !== 0);
    if (typed >= 0)
      return `transaction ${typed} is of type ${transactions[typed]!.type}: typed transactions are not active at this height`;
  }
  const txRoot = await orderedTrieRoot(transactions.map((tx) => tx.raw));
  if (!equalBytes(txRoot, header.transactionsRoot))
    return "transactions root does not match the transactions";
  return undefined;
}

/**
 * Why `block` and `receipts` are not the body and receipts its header commits to, or
 * `undefined`: transactions root, uncles, typed transactions' activation, receipts root, logs
 * bloom and gas used. The state is not run: the snapshot's state is the header's state root.
 */
export async function pivotBodyMismatch(
  network: NetworkPreset,
  block: Block,
  receipts: readonly Receipt[],
): Promise<string | undefined> {
  const { header } = block;
  const why = unclesMismatch(header, block.uncles) ?? (await transactionsMismatch(network, block));
  if (why !== undefined) return why;
  if (receipts.length !== block.transactions.length)
    return `${receipts.length} receipts for ${block.transactions.length} transactions`;
  const receiptsRoot = await orderedTrieRoot(receipts.map(encodeReceipt));
  if (!equalBytes(receiptsRoot, header.receiptsRoot))
    return "receipts root does not match the receipts";
  const bloom = new Uint8Array(256);
  for (const receipt of receipts) orBloom(bloom, receipt.logsBloom);
  if (!equalBytes(bloom, header.logsBloom)) return "logs bloom does not match the receipts";
  const gasUsed = receipts.at(-1)?.cumulativeGasUsed ?? 0n;
  if (gasUsed !== header.gasUsed) return `gas used ${header.gasUsed}, the receipts use ${gasUsed}`;
  return undefined;
}
