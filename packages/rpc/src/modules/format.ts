import { type FoundLog, type IncludedReceipt, isPending, type StoredBlock } from "@nodex/chain";
import { forkDetectionDataFromCoinbase } from "@nodex/mergemining";
import type { StateProof } from "@nodex/state";
import {
  type BlockHeader,
  bytesToHex,
  contractAddress,
  encodeBlock,
  encodeQuantity,
  FORK_DETECTION_HEIGHT,
  hashForMergedMiningBase,
  headerHash,
  type SignedTransaction,
  withForkDetectionData,
} from "@nodex/types";
import { takeAnswerBuffer } from "../answerBuffers.js";

const ZERO_NONCE = "0x0000000000000000";
const ZERO_HASH = `0x${"00".repeat(32)}`;

/**
 * The spec's block object; `fullTransactions` puts transaction objects in place of hashes. The
 * pending block has `number`, `hash`, `nonce` and `logsBloom` null, as the spec says, and its
 * transactions no block.
 */
export function formatBlock(
  stored: StoredBlock,
  fullTransactions: boolean,
  typedTransactionsFrom: bigint | null = null,
): Record<string, unknown> {
  const { header, transactions, uncles } = stored.block;
  let cumulativeDifficulty = header.difficulty;
  for (const uncle of uncles) cumulativeDifficulty += uncle.difficulty;
  const pending = isPending(stored);
  return {
    ...formatHeaderFields(header, stored.hash),
    ...(pending ? { number: null, hash: null, nonce: null, logsBloom: null } : {}),
    // Where typed transactions are active (RSKIP546) the block says its base fee, zero: tools
    // (ethers, viem, web3.js, cast) read it to choose type 2 and price it; before, they see
    // none and send legacy transactions.
    ...(typedTransactionsFrom !== null && header.number >= typedTransactionsFrom
      ? { baseFeePerGas: "0x0" }
      : {}),
    cumulativeDifficulty: encodeQuantity(cumulativeDifficulty),
    totalDifficulty: encodeQuantity(stored.totalDifficulty),
    size: encodeQuantity(encodeBlock(stored.block).length),
    transactions: fullTransactions
      ? transactions.map((tx, i) => formatTransaction(tx, pending ? undefined : stored, i))
      : transactions.map((tx) => bytesToHex(tx.hash)),
    uncles: uncles.map((u) => bytesToHex(headerHash(u))),
  };
}

function formatHeaderFields(header: BlockHeader, hash: Uint8Array): Record<string, unknown> {
  return {
    number: encodeQuantity(header.number),
    hash: bytesToHex(hash),
    parentHash: bytesToHex(header.parentHash),
    mixHash: ZERO_HASH,
    nonce: ZERO_NONCE,
    sha3Uncles: bytesToHex(header.unclesHash),
    logsBloom: bytesToHex(header.logsBloom),
    transactionsRoot: bytesToHex(header.transactionsRoot),
    stateRoot: bytesToHex(header.stateRoot),
    receiptsRoot: bytesToHex(header.receiptsRoot),
    miner: bytesToHex(header.coinbase),
    difficulty: encodeQuantity(header.difficulty),
    extraData: bytesToHex(header.extraData),
    gasLimit: encodeQuantity(header.gasLimit),
    gasUsed: encodeQuantity(header.gasUsed),
    timestamp: encodeQuantity(header.timestamp),
    minimumGasPrice: encodeQuantity(header.minimumGasPrice),
    bitcoinMergedMiningHeader: bytesToHex(header.bitcoinMergedMiningHeader),
    bitcoinMergedMiningCoinbaseTransaction: bytesToHex(
      header.bitcoinMergedMiningCoinbaseTransaction,
    ),
    bitcoinMergedMiningMerkleProof: bytesToHex(header.bitcoinMergedMiningMerkleProof),
    hashForMergedMining: bytesToHex(hashForMergedMining(header)),
    paidFees: encodeQuantity(header.paidFees),
  };
}

/**
 * The spec's transaction object; `block` absent for a pending transaction. `blockTimestamp`
 * (the execution-apis field) is the including block's time, `null` while pending.
 */
export function formatTransaction(
  tx: SignedTransaction,
  block: StoredBlock | undefined,
  index: number,
): Record<string, unknown> {
  return {
    hash: bytesToHex(tx.hash),
    nonce: encodeQuantity(tx.nonce),
    blockHash: block === undefined ? null : bytesToHex(block.hash),
    blockNumber: block === undefined ? null : encodeQuantity(block.block.header.number),
    transactionIndex: block === undefined ? null : encodeQuantity(index),
    blockTimestamp: block === undefined ? null : encodeQuantity(block.block.header.timestamp),
    from: bytesToHex(tx.from),
    to: tx.to === null ? null : bytesToHex(tx.to),
    gas: encodeQuantity(tx.gasLimit),
    gasPrice: encodeQuantity(tx.gasPrice),
    value: encodeQuantity(tx.value),
    input: bytesToHex(tx.data),
    v: encodeQuantity(tx.v),
    r: encodeQuantity(tx.r),
    s: encodeQuantity(tx.s),
    type: encodeQuantity(tx.type),
    ...(tx.chainId === undefined ? {} : { chainId: encodeQuantity(tx.chainId) }),
    ...(tx.type === 0 ? {} : typedFields(tx)),
  };
}

/** A typed transaction's own fields, as geth shows them (`gasPrice` is the effective one). */
function typedFields(tx: SignedTransaction): Record<string, unknown> {
  return {
    ...(tx.type === 2
      ? {
          maxPriorityFeePerGas: encodeQuantity(tx.maxPriorityFeePerGas ?? 0n),
          maxFeePerGas: encodeQuantity(tx.maxFeePerGas ?? 0n),
        }
      : {}),
    accessList: tx.accessList.map((entry) => ({
      address: bytesToHex(entry.address),
      storageKeys: entry.storageKeys.map(bytesToHex),
    })),
    yParity: encodeQuantity(tx.v),
  };
}

/**
 * The spec's receipt object: always the `status` form. A receipt of the pending block (only
 * `eth_getBlockReceipts("pending")` shows them) has `blockHash` and `blockNumber` null, as that
 * block has them, and so do its logs.
 */
export function formatReceipt(found: IncludedReceipt): Record<string, unknown> {
  const { tx, block, index, receipt } = found;
  const pending = isPending(block);
  const blockHash = pending ? null : bytesToHex(block.hash);
  const blockNumber = pending ? null : encodeQuantity(block.block.header.number);
  const transactionHash = bytesToHex(tx.hash);
  const transactionIndex = encodeQuantity(index);
  return {
    transactionHash,
    transactionIndex,
    blockHash,
    blockNumber,
    from: bytesToHex(tx.from),
    to: tx.to === null ? null : bytesToHex(tx.to),
    cumulativeGasUsed: encodeQuantity(receipt.cumulativeGasUsed),
    gasUsed: encodeQuantity(found.gasUsed),
    effectiveGasPrice: encodeQuantity(tx.gasPrice),
    contractAddress:
      tx.to === null && receipt.status === 1
        ? bytesToHex(contractAddress(tx.from, tx.nonce))
        : null,
    logs: receipt.logs.map((log, i) => ({
      removed: false,
      logIndex: encodeQuantity(found.firstLogIndex + i),
      transactionIndex,
      transactionHash,
      blockHash,
      blockNumber,
      address: bytesToHex(log.address),
      data: bytesToHex(log.data),
      topics: log.topics.map(bytesToHex),
    })),
    logsBloom: bytesToHex(receipt.logsBloom),
    type: encodeQuantity(tx.type),
    status: encodeQuantity(receipt.status),
  };
}

/** The spec's log object, `removed` included (`true` for a log a reorganization took away). */
export function formatLog(found: FoundLog, removed = false): Record<string, unknown> {
  return {
    removed,
    logIndex: encodeQuantity(found.logIndex),
    transactionIndex: encodeQuantity(found.transactionIndex),
    transactionHash: bytesToHex(found.transactionHash),
    blockHash: bytesToHex(found.blockHash),
    blockNumber: encodeQuantity(found.blockNumber),
    address: bytesToHex(found.log.address),
    data: bytesToHex(found.log.data),
    topics: found.log.topics.map(bytesToHex),
  };
}

/** Lowercase hex digits as character codes. */
const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");
/** The two hex digits of each byte value as one little-endian 16-bit unit (written at once). */
const HEX_PAIRS = Uint16Array.from(
  { length: 256 },
  (_, b) => HEX_DIGITS[b >> 4]! | (HEX_DIGITS[b & 15]! << 8),
);
const ASCII = new TextEncoder();
const LOG_PARTS = {
  removed: ASCII.encode('{"removed":true,"logIndex":"0x'),
  kept: ASCII.encode('{"removed":false,"logIndex":"0x'),
  transactionIndex: ASCII.encode('","transactionIndex":"0x'),
  transactionHash: ASCII.encode('","transactionHash":"0x'),
  blockHash: ASCII.encode('","blockHash":"0x'),
  blockNumber: ASCII.encode('","blockNumber":"0x'),
  address: ASCII.encode('","address":"0x'),
  data: ASCII.encode('","data":"0x'),
  topics: ASCII.encode('","topics":['),
};
/** Characters of one log's JSON besides its hex: the parts above, quantities and punctuation. */
const LOG_FIXED = Object.values(LOG_PARTS).reduce((n, part) => n + part.length, 0) + 3 * 20 + 4;

/**
 * The JSON of logs (`removed: false`) read from log records, by log object: the chain keeps
 * recently read records decoded and hands out the same objects again, so a log queried again
 * is copied rather than formatted. Entries go with their objects.
 */
const LOG_TEXTS = new WeakMap<FoundLog, string>();

/**
 * The JSON array of `logs`, each as `JSON.stringify(formatLog(log, removed))` writes it, built
 * as text directly.
 */
export function formatLogsJson(logs: readonly FoundLog[], removed = false): string {
  const texts = logTexts(logs, removed);
  if (texts.length === 0) return "[]";
  // The brackets on the first and last texts, so that `join` makes the one flat string.
  texts[0] = `[${texts[0]}`;
  texts[texts.length - 1] = `${texts[texts.length - 1]}]`;
  return texts.join(",");
}

/**
 * Bytes left free before and after the JSON `formatLogsJsonBytes` writes, in the same buffer:
 * room for the response's head (`{"jsonrpc":"2.0","id":…,"result":`) and its closing brace,
 * so that the dispatcher writes them around the result instead of copying it (see `RawJson`).
 */
export const LOGS_JSON_ROOM = { before: 64, after: 1 } as const;

/**
 * `formatLogsJson(logs)`'s text as bytes (ASCII, so also its UTF-8), in a buffer of its own with
 * `LOGS_JSON_ROOM` around them: what `eth_getLogs` answers with. A new buffer, which may be
 * moved to another thread; or, with `reuse`, one of `takeAnswerBuffer`'s, for an answer written
 * on this thread. Copying the logs' texts into one buffer costs a fraction of what joining them
 * does once the answer is large: V8 places each string over 128 kB in fresh memory of its own,
 * whose pages the system then faults in one by one, on every such string made.
 */
export function formatLogsJsonBytes(logs: readonly FoundLog[], reuse = false): Uint8Array {
  const texts = logTexts(logs, false);
  let size = texts.length === 0 ? 2 : texts.length + 1;
  for (const text of texts) size += text.length;
  const { before, after } = LOGS_JSON_ROOM;
  const out = reuse
    ? takeAnswerBuffer(before + size + after)
    : Buffer.allocUnsafeSlow(before + size + after);
  out[before] = 0x5b; // [
  let at = before + 1;
  for (let i = 0; i < texts.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    at += out.write(texts[i]!, at, "latin1");
  }
  out[at] = 0x5d; // ]
  return out.subarray(before, before + size);
}

/** Each log's JSON text (one-byte strings, ASCII), by position. */
function logTexts(logs: readonly FoundLog[], removed: boolean): string[] {
  const texts: string[] = new Array(logs.length);
  /** The logs to format, by position. */
  const missing: number[] = [];
  let size = 0;
  for (let i = 0; i < logs.length; i++) {
    const found = logs[i]!;
    const known = removed ? undefined : LOG_TEXTS.get(found);
    if (known !== undefined) {
      texts[i] = known;
      continue;
    }
    missing.push(i);
    const { log } = found;
    const bytes =
      found.transactionHash.length + found.blockHash.length + log.address.length + log.data.length;
    size += LOG_FIXED + 2 * bytes + 70 * log.topics.length;
  }
  if (missing.length === 0) return texts;
  const out = Buffer.allocUnsafe(size);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const opening = removed ? LOG_PARTS.removed : LOG_PARTS.kept;
  let at = 0;
  for (const i of missing) {
    const found = logs[i]!;
    const start = at;
    at = putBytes(out, at, opening);
    at = putQuantity(out, at, found.logIndex);
    at = putBytes(out, at, LOG_PARTS.transactionIndex);
    at = putQuantity(out, at, found.transactionIndex);
    at = putBytes(out, at, LOG_PARTS.transactionHash);
    at = putHex(view, at, found.transactionHash);
    at = putBytes(out, at, LOG_PARTS.blockHash);
    at = putHex(view, at, found.blockHash);
    at = putBytes(out, at, LOG_PARTS.blockNumber);
    at = putQuantity(out, at, found.blockNumber);
    at = putBytes(out, at, LOG_PARTS.address);
    at = putHex(view, at, found.log.address);
    at = putBytes(out, at, LOG_PARTS.data);
    at = putHex(view, at, found.log.data);
    at = putBytes(out, at, LOG_PARTS.topics);
    const { topics } = found.log;
    for (let t = 0; t < topics.length; t++) {
      if (t > 0) out[at++] = 0x2c; // ,
      out[at++] = 0x22; // "
      out[at++] = 0x30; // 0
      out[at++] = 0x78; // x
      at = putHex(view, at, topics[t]!);
      out[at++] = 0x22;
    }
    out[at++] = 0x5d; // ]
    out[at++] = 0x7d; // }
    const text = out.toString("latin1", start, at);
    texts[i] = text;
    // Logs read whole from their block are new objects every time: not worth remembering.
    if (!removed && found.block === undefined) LOG_TEXTS.set(found, text);
  }
  return texts;
}

function putBytes(out: Uint8Array, at: number, part: Uint8Array): number {
  for (let i = 0; i < part.length; i++) out[at + i] = part[i]!;
  return at + part.length;
}

function putHex(view: DataView, at: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) view.setUint16(at + 2 * i, HEX_PAIRS[bytes[i]!]!, true);
  return at + 2 * bytes.length;
}

/** A QUANTITY's digits, without `0x` (a safe integer or a 64-bit bigint at most). */
function putQuantity(out: Uint8Array, at: number, value: number | bigint): number {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`cannot encode ${value} as a QUANTITY: not a non-negative safe integer`);
    if (value < 16) {
      out[at] = HEX_DIGITS[value]!;
      return at + 1;
    }
  } else if (value < 0n) throw new RangeError(`cannot encode ${value} as a QUANTITY: negative`);
  const digits = value.toString(16);
  for (let i = 0; i < digits.length; i++) out[at + i] = digits.charCodeAt(i);
  return at + digits.length;
}

/**
 * `eth_getProof`'s object (EIP-1186). Each `storageProof[i].key` is the key as the request wrote
 * it (`asked[i]`), as geth answers it, rather than the spec's QUANTITY.
 */
export function formatProof(
  proof: StateProof,
  asked: readonly string[] = [],
): Record<string, unknown> {
  return {
    address: bytesToHex(proof.address),
    balance: encodeQuantity(proof.balance),
    codeHash: bytesToHex(proof.codeHash),
    nonce: encodeQuantity(proof.nonce),
    storageHash: bytesToHex(proof.storageHash),
    accountProof: proof.accountProof.map(bytesToHex),
    storageProof: proof.storageProof.map((s, i) => ({
      key: asked[i] ?? bytesToHex(s.key),
      value: encodeQuantity(s.value),
      proof: s.proof.map(bytesToHex),
    })),
  };
}

/**
 * A sealed header's hashForMergedMining: from block 449 the last 12 bytes are the fork-detection
 * data its miner wrote after the tag (the chain checked them against the block's ancestors when
 * it took the block in).
 */
function hashForMergedMining(header: BlockHeader): Uint8Array {
  const base = hashForMergedMiningBase(header);
  const coinbase = header.bitcoinMergedMiningCoinbaseTransaction;
  if (header.number < FORK_DETECTION_HEIGHT || coinbase.length === 0) return base;
  try {
    return withForkDetectionData(base, forkDetectionDataFromCoinbase(coinbase, base));
  } catch {
    return base;
  }
}
