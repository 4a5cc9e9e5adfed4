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
): Record<string, unknown> {
  const { header, transactions, uncles } = stored.block;
  let cumulativeDifficulty = header.difficulty;
  for (const uncle of uncles) cumulativeDifficulty += uncle.difficulty;
  const pending = isPending(stored);
  return {
    ...formatHeaderFields(header, stored.hash),
    ...(pending ? { number: null, hash: null, nonce: null, logsBloom: null } : {}),
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
    type: "0x0",
    ...(tx.chainId === undefined ? {} : { chainId: encodeQuantity(tx.chainId) }),
  };
}

/** The spec's receipt object: always the `status` form. */
export function formatReceipt(found: IncludedReceipt): Record<string, unknown> {
  const { tx, block, index, receipt } = found;
  const blockHash = bytesToHex(block.hash);
  const blockNumber = encodeQuantity(block.block.header.number);
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
    type: "0x0",
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
    blockHash: bytesToHex(found.block.hash),
    blockNumber: encodeQuantity(found.block.block.header.number),
    address: bytesToHex(found.log.address),
    data: bytesToHex(found.log.data),
    topics: found.log.topics.map(bytesToHex),
  };
}

/** `eth_getProof`'s object (EIP-1186). */
export function formatProof(proof: StateProof): Record<string, unknown> {
  return {
    address: bytesToHex(proof.address),
    balance: encodeQuantity(proof.balance),
    codeHash: bytesToHex(proof.codeHash),
    nonce: encodeQuantity(proof.nonce),
    storageHash: bytesToHex(proof.storageHash),
    accountProof: proof.accountProof.map(bytesToHex),
    storageProof: proof.storageProof.map((s) => ({
      key: bytesToHex(s.key),
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
