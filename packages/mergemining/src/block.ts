import { BITCOIN_HEADER_SIZE, type BitcoinHeader, parseBitcoinHeader } from "./bitcoinHeader.js";
import { malformed } from "./errors.js";
import {
  type BitcoinTransaction,
  ByteReader,
  encodeBitcoinTransaction,
  readBitcoinTransaction,
  txid,
} from "./transaction.js";

export interface BitcoinBlock {
  readonly header: BitcoinHeader;
  /** The 80 header bytes as they were serialized. */
  readonly headerBytes: Uint8Array;
  readonly transactions: readonly BitcoinTransaction[];
  /** Txids in block order, raw byte order. */
  readonly txids: readonly Uint8Array[];
}

/** Parses header + varint count + transactions; trailing bytes are an error. */
export function parseBitcoinBlock(bytes: Uint8Array): BitcoinBlock {
  if (bytes.length < BITCOIN_HEADER_SIZE) {
    throw malformed(
      `a Bitcoin block starts with an ${BITCOIN_HEADER_SIZE}-byte header, got ${bytes.length} bytes`,
    );
  }
  const headerBytes = bytes.slice(0, BITCOIN_HEADER_SIZE);
  const header = parseBitcoinHeader(headerBytes);
  const r = new ByteReader(bytes, BITCOIN_HEADER_SIZE, "block");
  const count = r.varint();
  const transactions: BitcoinTransaction[] = [];
  for (let i = 0; i < count; i++) transactions.push(readBitcoinTransaction(r));
  if (r.offset !== bytes.length)
    throw malformed(`block: ${bytes.length - r.offset} trailing bytes`);
  return { header, headerBytes, transactions, txids: transactions.map((t) => txid(t)) };
}

/** The legacy (witness-free) serialization of a block's coinbase, what proofs are built from. */
export function coinbaseWithoutWitness(block: BitcoinBlock): Uint8Array {
  const cb = block.transactions[0];
  if (cb === undefined) throw malformed("block has no transactions");
  return encodeBitcoinTransaction(cb, false);
}
