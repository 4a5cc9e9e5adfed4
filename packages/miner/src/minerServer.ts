import { type BlockTemplate, type Chain, ChainError, ChainErrorCode } from "@nodex/chain";
import {
  buildMerkleProof,
  compressCoinbase,
  difficultyToTarget,
  doubleSha256,
  encodeBitcoinTransaction,
  extractTaggedHash,
  hashMeetsTarget,
  merkleProofFromBranch,
  parseBitcoinBlock,
  parseBitcoinHeader,
  parseBitcoinTransaction,
  syntheticCoinbase,
  syntheticHeader,
  targetToBytes,
  targetToCompact,
  txid,
} from "@nodex/mergemining";
import {
  type Address,
  bytesToHex,
  equalBytes,
  headerHash,
  type Logger,
  NodexError,
  type SignedTransaction,
} from "@nodex/types";

/** Templates kept for submissions, newest last (the reference node keeps 20). */
const TEMPLATES_KEPT = 20;
/** A template older than this is rebuilt even when the head has not moved (new transactions). */
const TEMPLATE_REFRESH_MS = 60_000;
/** Hashrate reports older than this no longer count. */
const HASHRATE_TTL_MS = 60_000;
/** Miners whose hashrate reports are kept (by their ids); past it the oldest report goes. */
export const HASHRATE_REPORTERS_KEPT = 10_000;

export interface MinerServerOptions {
  /** Beneficiary of the blocks built for miners. */
  readonly coinbase: () => Address;
  /** Transactions waiting for a block, in the order to try them. */
  readonly transactions: () => readonly SignedTransaction[];
  /** Changes whenever those transactions change: the work is rebuilt with them. */
  readonly transactionsVersion?: () => number;
  readonly logger: Logger;
  /** Milliseconds; `Date.now` by default. */
  readonly now?: () => number;
}

/** `mnr_getWork`'s fields. */
export interface MergedMiningWork {
  readonly blockHashForMergedMining: Uint8Array;
  readonly target: Uint8Array;
  readonly feesPaidToMiner: bigint;
  readonly notify: boolean;
  readonly parentBlockHash: Uint8Array;
}

/** What became of a submitted solution (the reference node's `SubmittedBlockInfo`). */
export interface SubmittedBlock {
  readonly blockImportedResult: string;
  readonly blockHash: Uint8Array;
  readonly blockIncludedHeight: bigint;
}

interface Template extends BlockTemplate {
  readonly target: Uint8Array;
  /** The target as a Bitcoin header's nBits. */
  readonly bits: number;
  readonly builtAt: number;
  readonly transactionsVersion: number | undefined;
}

/**
 * Work for merged miners: block templates built on the head (again when the head or the waiting
 * transactions change, and at least every minute), found again by the
 * hashForMergedMining a miner's Bitcoin coinbase commits to, sealed with the miner's proof and
 * imported through the chain's full validation. Also a solo-mining protocol over `eth_getWork`
 * and `eth_submitWork` (docs/mining.md): the node keeps a synthetic Bitcoin block per template,
 * and an 8-byte nonce supplies its coinbase extra-nonce and header nonce.
 */
export class MinerServer {
  readonly #chain: Chain;
  readonly #opts: MinerServerOptions;
  readonly #now: () => number;
  /** Templates by hashForMergedMining (hex), oldest first. */
  readonly #templates = new Map<string, Template>();
  #current: Template | undefined;
  #building: Promise<Template> | undefined;
  /** Whether the current template was handed out with `notify: true`. */
  #notified = false;
  readonly #hashrates = new Map<string, { rate: bigint; at: number }>();

  constructor(chain: Chain, opts: MinerServerOptions) {
    this.#chain = chain;
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** The current work; rebuilt when the head moved or the template is a minute old. */
  async getWork(): Promise<MergedMiningWork> {
    const previous = this.#current;
    const template = await this.#template();
    const fresh = previous === undefined || !equalBytes(previous.parentHash, template.parentHash);
    if (fresh) this.#notified = false;
    const notify = !this.#notified;
    this.#notified = true;
    return {
      blockHashForMergedMining: template.hashForMergedMining,
      target: template.target,
      feesPaidToMiner: template.block.header.paidFees,
      notify,
      parentBlockHash: template.parentHash,
    };
  }

  async #template(): Promise<Template> {
    const current = this.#current;
    const head = this.#chain.head;
    if (
      current !== undefined &&
      equalBytes(current.parentHash, head.hash) &&
      current.transactionsVersion === this.#opts.transactionsVersion?.() &&
      this.#now() - current.builtAt < TEMPLATE_REFRESH_MS
    ) {
      return current;
    }
    this.#building ??= this.#build().finally(() => {
      this.#building = undefined;
    });
    return this.#building;
  }

  async #build(): Promise<Template> {
    const transactionsVersion = this.#opts.transactionsVersion?.();
    const built = await this.#chain.buildTemplate(this.#opts.transactions(), {
      coinbase: this.#opts.coinbase(),
    });
    const target = difficultyToTarget(built.block.header.difficulty);
    // Object.assign, not a spread followed by fields (a hidden class per object on V8 11).
    const template: Template = Object.assign({}, built, {
      target: targetToBytes(target),
      bits: targetToCompact(target),
      builtAt: this.#now(),
      transactionsVersion,
    });
    this.#templates.set(bytesToHex(template.hashForMergedMining), template);
    while (this.#templates.size > TEMPLATES_KEPT)
      this.#templates.delete(this.#templates.keys().next().value as string);
    this.#current = template;
    this.#opts.logger.debug("New mining work", {
      number: template.block.header.number,
      hashForMergedMining: bytesToHex(template.hashForMergedMining),
      txs: template.block.transactions.length,
    });
    return template;
  }

  /** A whole Bitcoin block: its coinbase (the first transaction) and every txid give the proof. */
  async submitBitcoinBlock(bytes: Uint8Array): Promise<SubmittedBlock> {
    const block = parsed(() => parseBitcoinBlock(bytes), "Bitcoin block");
    if (block.transactions.length === 0)
      throw submissionError("the Bitcoin block has no transactions");
    const coinbase = encodeBitcoinTransaction(block.transactions[0]!, false);
    return this.#submit(block.headerBytes, coinbase, buildMerkleProof(block.txids));
  }

  /** The header, the coinbase and the block's txids in display order, the coinbase's first. */
  async submitBitcoinBlockTransactions(
    header: Uint8Array,
    coinbase: Uint8Array,
    txids: readonly Uint8Array[],
  ): Promise<SubmittedBlock> {
    const stripped = withoutWitness(coinbase);
    const raw = txids.map((t) => t.slice().reverse());
    if (raw.length === 0 || !equalBytes(raw[0]!, txid(stripped)))
      throw submissionError("the first transaction hash is not the coinbase's");
    return this.#submit(header, stripped, buildMerkleProof(raw));
  }

  /** The header, the coinbase, and its txid then its Merkle branch in raw byte order. */
  async submitBitcoinBlockPartialMerkle(
    header: Uint8Array,
    coinbase: Uint8Array,
    merkleHashes: readonly Uint8Array[],
    _transactionCount: number,
  ): Promise<SubmittedBlock> {
    const stripped = withoutWitness(coinbase);
    if (merkleHashes.length === 0)
      throw submissionError("The list of merkle hashes can't be empty");
    if (!equalBytes(merkleHashes[0]!, txid(stripped)))
      throw submissionError("the first merkle hash is not the coinbase's txid");
    return this.#submit(header, stripped, merkleProofFromBranch(merkleHashes));
  }

  /** Seals the template the coinbase's tag names with the miner's proof, and imports it. */
  async #submit(
    bitcoinHeader: Uint8Array,
    coinbase: Uint8Array,
    merkleProof: Uint8Array,
  ): Promise<SubmittedBlock> {
    parsed(() => parseBitcoinHeader(bitcoinHeader), "Bitcoin block header");
    const tagged = extractTaggedHash(coinbase);
    if (tagged === undefined)
      throw submissionError("the coinbase has no RSKBLOCK: tag followed by a block hash");
    const template = this.#templates.get(bytesToHex(tagged));
    if (template === undefined) {
      throw submissionError(
        `Cannot publish block, could not find hash ${bytesToHex(tagged)} in the cache`,
      );
    }
    const block = Object.assign({}, template.block, {
      header: Object.assign({}, template.block.header, {
        bitcoinMergedMiningHeader: bitcoinHeader,
        bitcoinMergedMiningCoinbaseTransaction: compressCoinbase(coinbase),
        bitcoinMergedMiningMerkleProof: merkleProof,
      }),
    });
    const hash = headerHash(block.header);
    const result = await this.#chain.importBlock(block);
    if (result.result === "INVALID_BLOCK" || result.result === "NO_PARENT") {
      throw submissionError(
        `Invalid block supplied by miner: ${bytesToHex(hash)} ${bytesToHex(tagged)} at height ${block.header.number}: ${result.reason}`,
      );
    }
    this.#opts.logger.info("Block from a miner", {
      number: block.header.number,
      hash: bytesToHex(hash),
      result: result.result,
    });
    return {
      blockImportedResult: result.result,
      blockHash: hash,
      blockIncludedHeight: block.header.number,
    };
  }

  /**
   * `eth_getWork`: [hashForMergedMining, seed, boundary]. The seed carries the synthetic Bitcoin
   * header's fields a miner needs: time (bytes 0..3) and nBits (4..7), big-endian.
   */
  async getEthWork(): Promise<{ powHash: Uint8Array; seedHash: Uint8Array; boundary: Uint8Array }> {
    const template = await this.#template();
    const seed = new Uint8Array(32);
    const view = new DataView(seed.buffer);
    view.setUint32(0, Number(template.block.header.timestamp));
    view.setUint32(4, template.bits);
    return { powHash: template.hashForMergedMining, seedHash: seed, boundary: template.target };
  }

  /**
   * `eth_submitWork`: the nonce's first 4 bytes are the coinbase extra-nonce, the last 4 the
   * Bitcoin header nonce (both big-endian). `false` for unknown or stale work and for a header
   * that does not meet the target; `true` when the block was taken in.
   */
  async submitEthWork(
    nonce: Uint8Array,
    powHash: Uint8Array,
    _mixDigest: Uint8Array,
  ): Promise<boolean> {
    const template = this.#templates.get(bytesToHex(powHash));
    if (template === undefined || nonce.length !== 8) return false;
    const view = new DataView(nonce.buffer, nonce.byteOffset, 8);
    const coinbase = syntheticCoinbase(template.hashForMergedMining, BigInt(view.getUint32(0)));
    const time = Number(template.block.header.timestamp);
    const header = syntheticHeader(coinbase, time, template.bits, view.getUint32(4));
    if (!hashMeetsTarget(doubleSha256(header), template.target)) return false;
    try {
      const res = await this.#submit(header, coinbase, buildMerkleProof([txid(coinbase)]));
      return res.blockImportedResult !== "EXIST";
    } catch (err) {
      if (err instanceof ChainError) return false;
      throw err;
    }
  }

  /**
   * Records a miner's reported hashrate (`eth_submitHashrate`). Reports are kept oldest first:
   * the expired ones go as new ones come, and at most `HASHRATE_REPORTERS_KEPT` are kept, so
   * reports under ever new ids take bounded memory even when nobody asks for the total.
   */
  submitHashrate(rate: bigint, id: Uint8Array): boolean {
    const now = this.#now();
    const key = bytesToHex(id);
    this.#hashrates.delete(key);
    this.#hashrates.set(key, { rate, at: now });
    for (const [oldest, entry] of this.#hashrates) {
      if (now - entry.at <= HASHRATE_TTL_MS && this.#hashrates.size <= HASHRATE_REPORTERS_KEPT)
        break;
      this.#hashrates.delete(oldest);
    }
    return true;
  }

  /**
   * The network's hashes per second over the last `blocks` blocks: a block at difficulty D takes
   * D hashes on average (its target is 2^256 / D), so the sum of difficulties over the time
   * they took.
   */
  async netHashrate(blocks = 64n): Promise<bigint> {
    const head = this.#chain.head.block.header;
    // Only the blocks after the chain's first (genesis or an anchor) were mined here.
    const start = this.#chain.firstBlock.number;
    if (head.number === start) return 0n;
    const first = head.number - blocks > start ? head.number - blocks : start;
    let work = 0n;
    let oldest = head;
    for (let n = head.number; n > first; n--) {
      const hash = await this.#chain.getCanonicalHash(n);
      const header = hash === undefined ? undefined : await this.#chain.getHeaderByHash(hash);
      if (header === undefined) break;
      work += header.difficulty;
      oldest = header;
    }
    const beforeHash = await this.#chain.getCanonicalHash(oldest.number - 1n);
    const before =
      beforeHash === undefined ? undefined : await this.#chain.getHeaderByHash(beforeHash);
    // A genesis with timestamp 0 (every preset's) says nothing of when mining started, nor does
    // an anchor (mined elsewhere): the span then runs from the oldest mined block, whose own
    // work went before that time.
    if (
      before === undefined ||
      (before.number === 0n && before.timestamp === 0n) ||
      (this.#chain.firstBlock.anchored && before.number === start)
    ) {
      work -= oldest.difficulty;
      const seconds = head.timestamp - oldest.timestamp;
      return seconds > 0n ? work / seconds : 0n;
    }
    const seconds = head.timestamp - before.timestamp;
    return seconds > 0n ? work / seconds : work;
  }

  /** The sum of the hashrates miners reported in the last minute. */
  reportedHashrate(): bigint {
    const now = this.#now();
    let sum = 0n;
    for (const [id, entry] of this.#hashrates) {
      if (now - entry.at > HASHRATE_TTL_MS) this.#hashrates.delete(id);
      else sum += entry.rate;
    }
    return sum;
  }
}

function withoutWitness(coinbase: Uint8Array): Uint8Array {
  return encodeBitcoinTransaction(
    parsed(() => parseBitcoinTransaction(coinbase), "coinbase transaction"),
    false,
  );
}

function parsed<T>(parse: () => T, what: string): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof NodexError) throw submissionError(`invalid ${what}: ${err.message}`);
    throw err;
  }
}

function submissionError(message: string): ChainError {
  return new ChainError(ChainErrorCode.MINING_SUBMISSION, message);
}
