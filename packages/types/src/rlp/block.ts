import type { Address } from "../data.js";
import { keccak256 } from "../keccak.js";
import { DecodeError, expectList, rlpDecode, rlpListOfEncoded } from "./codec.js";
import { type BlockHeader, encodeHeader, headerFromItem } from "./header.js";
import { type SignedTransaction, transactionFromItem, transactionListItem } from "./transaction.js";

/** A block as stored and sent to peers: `[header, [transactions], [uncle headers]]`. */
export interface Block {
  readonly header: BlockHeader;
  readonly transactions: readonly SignedTransaction[];
  readonly uncles: readonly BlockHeader[];
}

export function encodeBlock(block: Block): Uint8Array {
  return rlpListOfEncoded([
    encodeHeader(block.header),
    rlpListOfEncoded(block.transactions.map(transactionListItem)),
    rlpListOfEncoded(block.uncles.map(encodeHeader)),
  ]);
}

export function decodeBlock(bytes: Uint8Array): Block {
  const [header, txs, uncles] = expectList(rlpDecode(bytes, "block"), "block", 3);
  return {
    header: headerFromItem(header!),
    transactions: expectList(txs!, "block transactions").map((item) => transactionFromItem(item)),
    uncles: expectList(uncles!, "block uncles").map(headerFromItem),
  };
}

/** `sha3Uncles`: keccak256 of the RLP list of the uncles' full headers. */
export function unclesHash(uncles: readonly BlockHeader[]): Uint8Array {
  return keccak256(rlpListOfEncoded(uncles.map(encodeHeader)));
}

/** A block body as stored: `[[transactions], [uncle headers]]`. */
export function encodeBody(block: Pick<Block, "transactions" | "uncles">): Uint8Array {
  return rlpListOfEncoded([
    rlpListOfEncoded(block.transactions.map(transactionListItem)),
    rlpListOfEncoded(block.uncles.map(encodeHeader)),
  ]);
}

/**
 * Reads a stored body. With `senders` (as `decodeSenders` reads them from the block's SENDERS
 * entry), `senders[i]` is transaction i's `from` and no signature is recovered; a count that is
 * not the number of transactions throws `DecodeError`.
 */
export function decodeBody(
  bytes: Uint8Array,
  senders?: readonly Uint8Array[],
): Pick<Block, "transactions" | "uncles"> {
  const [txs, uncles] = expectList(rlpDecode(bytes, "block body"), "block body", 2);
  const items = expectList(txs!, "block transactions");
  if (senders !== undefined && senders.length !== items.length) {
    throw new DecodeError(
      `invalid block senders: ${senders.length} senders for ${items.length} transactions`,
    );
  }
  return {
    transactions: items.map((item, i) =>
      transactionFromItem(item, undefined, senders?.[i] as Address | undefined),
    ),
    uncles: expectList(uncles!, "block uncles").map(headerFromItem),
  };
}
