/**
 * The first byte of every key in the node's database says what the key holds. Numbers are
 * never reused; `docs/storage.md` describes each bucket's keys and values.
 */
export const Bucket = {
  /** Trie nodes (state, storage) and contract code, keyed by hash. */
  TRIE: 0x01,
  /** Block headers by hash. */
  HEADER: 0x02,
  /** Block bodies (transactions and uncles) by hash. */
  BODY: 0x03,
  /** Receipts of a block by block hash. */
  RECEIPTS: 0x04,
  /** Canonical chain: 8-byte big-endian number → block hash. */
  CANONICAL: 0x05,
  /** Transaction hash → block hash and index. */
  TX_LOOKUP: 0x06,
  /** Total difficulty by block hash. */
  TOTAL_DIFFICULTY: 0x07,
  /** Single values: head block hash, schema version. */
  META: 0x08,
  /**
   * Senders of a block's transactions by block hash: their 20-byte addresses concatenated, in
   * body order (`encodeSenders` / `decodeSenders` of `@nodex/types`), so that reading a stored
   * block never recovers a signature.
   */
  SENDERS: 0x09,
  /**
   * Log index: kind byte (0 address, 1 + position for a topic) ‖ the 20-byte address or
   * 32-byte topic ‖ 8-byte big-endian block number → empty. One entry per distinct address and
   * per distinct (position, topic) among the logs of each canonical block, from the block
   * `META` names under `logIndexStart` on. Kind 0x10 ‖ 8-byte block number → the canonical
   * block's log record (its hash, and each transaction with logs: index, hash, logs), from
   * `logRecordStart` on: `eth_getLogs` reads it instead of the body and receipts.
   */
  LOG_INDEX: 0x0a,
  /**
   * A forked chain's history (its upstream's answers about blocks up to the fork block):
   * keccak256 of the call (method and params as JSON) → the answer's JSON, UTF-8. They cannot
   * change, so a restart answers them without the upstream.
   */
  FORK_HISTORY: 0x0b,
} as const;
export type Bucket = (typeof Bucket)[keyof typeof Bucket];

export function bucketKey(bucket: Bucket, key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out[0] = bucket;
  out.set(key, 1);
  return out;
}
