import {
  type Block,
  type BlockHeader,
  bytesToHex,
  equalBytes,
  headerHash,
  unclesHash,
} from "@nodex/types";

/**
 * The consensus rules a block is checked against that depend on proof of work: its difficulty
 * and its seal (the merged-mining proof). Block production and import use the same rules.
 */
export interface ConsensusRules {
  /** The difficulty the child of `parent` made at `timestamp` with `uncleCount` uncles must have. */
  difficulty(parent: BlockHeader, timestamp: bigint, uncleCount: number): bigint;
  /**
   * Why the header's seal (proof of work) is not valid; `undefined` when it is. The seal must
   * commit to `hashForMergedMining`, which the chain computes (with fork-detection data from
   * block 449).
   */
  checkSeal(header: BlockHeader, hashForMergedMining: Uint8Array): string | undefined;
  /**
   * How far past the local clock a block's time may be, in seconds (`MAX_FUTURE_SECONDS` when
   * absent); `null` for no limit: development networks, whose clocks move by `evm_increaseTime`
   * and whose blocks can be made faster than one a second.
   */
  readonly maxFutureSeconds?: bigint | null;
  /**
   * Whether a block may set any gas limit its gas used fits in: development networks, whose
   * producer sets it (`--block-gas-limit`, `evm_setBlockGasLimit`), so that a node that follows
   * one, or imports its chain, takes its blocks. Elsewhere (absent) the gas limit moves by at
   * most 1/1024 of the parent's and stays at least `MIN_GAS_LIMIT`.
   */
  readonly freeGasLimit?: boolean;
}

/**
 * Rules without proof of work: the difficulty stays the parent's and any seal passes. For tests
 * of other parts of the chain, and development networks until merged-mining proofs are wired.
 */
export const NO_PROOF_OF_WORK: ConsensusRules = {
  difficulty: (parent) => parent.difficulty,
  checkSeal: () => undefined,
};

/** Most uncles a block may include (the reference node's `getUncleListLimit`). */
export const MAX_UNCLES = 10;
/** How many generations back an uncle's parent may be. */
export const UNCLE_GENERATIONS = 7;
/** The least gas limit of any block. */
export const MIN_GAS_LIMIT = 3_000_000n;
/** Seconds a block's timestamp may be ahead of this node's clock. */
export const MAX_FUTURE_SECONDS = 540n;

/**
 * The rules a header must meet given its parent and no state: number, time, gas limit and
 * minimum gas price moves, difficulty and seal. Returns why the header is invalid, or
 * `undefined`.
 */
export function checkHeader(
  header: BlockHeader,
  parent: BlockHeader,
  rules: ConsensusRules,
  now: bigint,
  hashForMergedMining: Uint8Array,
): string | undefined {
  if (header.number !== parent.number + 1n)
    return `number ${header.number} does not follow its parent's ${parent.number}`;
  if (header.timestamp <= parent.timestamp)
    return `timestamp ${header.timestamp} is not after its parent's ${parent.timestamp}`;
  const future = rules.maxFutureSeconds === undefined ? MAX_FUTURE_SECONDS : rules.maxFutureSeconds;
  if (future !== null && header.timestamp > now + future)
    return `timestamp ${header.timestamp} is more than ${future} s in the future`;
  if (rules.freeGasLimit !== true) {
    const step = parent.gasLimit / 1024n;
    if (header.gasLimit < parent.gasLimit - step || header.gasLimit > parent.gasLimit + step)
      return `gas limit ${header.gasLimit} moves more than 1/1024 from its parent's ${parent.gasLimit}`;
    if (header.gasLimit < MIN_GAS_LIMIT)
      return `gas limit ${header.gasLimit} is below the least ${MIN_GAS_LIMIT}`;
  }
  if (header.gasUsed > header.gasLimit)
    return `gas used ${header.gasUsed} is over the gas limit ${header.gasLimit}`;
  const mgpStep = parent.minimumGasPrice / 100n > 1n ? parent.minimumGasPrice / 100n : 1n;
  if (
    header.minimumGasPrice > parent.minimumGasPrice + mgpStep ||
    header.minimumGasPrice < parent.minimumGasPrice - mgpStep
  ) {
    return `minimum gas price ${header.minimumGasPrice} moves more than 1% from its parent's ${parent.minimumGasPrice}`;
  }
  const difficulty = rules.difficulty(parent, header.timestamp, header.uncleCount);
  if (header.difficulty !== difficulty)
    return `difficulty ${header.difficulty} is not the expected ${difficulty}`;
  const seal = rules.checkSeal(header, hashForMergedMining);
  if (seal !== undefined) return `invalid merged-mining proof: ${seal}`;
  return undefined;
}

/**
 * The uncle rules: at most ten, distinct, each a valid header on a recent ancestor, neither an
 * ancestor itself nor already included by one. `ancestors` are the block's last seven
 * ancestors, parent first; `usedUncles` the hashes of the uncles they include.
 */
export function checkUncles(
  block: Block,
  ancestors: readonly { hash: Uint8Array; header: BlockHeader }[],
  usedUncles: ReadonlySet<string>,
  rules: ConsensusRules,
  hashesForMergedMining: readonly Uint8Array[],
): string | undefined {
  const { header, uncles } = block;
  if (header.uncleCount !== uncles.length)
    return `uncle count ${header.uncleCount} does not match the ${uncles.length} uncles`;
  if (uncles.length > MAX_UNCLES) return `${uncles.length} uncles, at most ${MAX_UNCLES}`;
  if (!equalBytes(unclesHash(uncles), header.unclesHash))
    return "uncles hash does not match the uncles";
  const ancestorHashes = new Set(ancestors.map((a) => bytesToHex(a.hash)));
  const ancestorHeaders = new Map(ancestors.map((a) => [bytesToHex(a.hash), a.header]));
  const seen = new Set<string>();
  for (const [i, uncle] of uncles.entries()) {
    const hash = bytesToHex(headerHash(uncle));
    if (seen.has(hash)) return `uncle ${hash} is included twice`;
    seen.add(hash);
    if (ancestorHashes.has(hash)) return `uncle ${hash} is an ancestor`;
    if (usedUncles.has(hash)) return `uncle ${hash} is already included by an ancestor`;
    if (uncle.number >= header.number || uncle.number + BigInt(UNCLE_GENERATIONS) <= header.number)
      return `uncle ${hash} at ${uncle.number} is not within ${UNCLE_GENERATIONS} generations of ${header.number}`;
    const parent = ancestorHeaders.get(bytesToHex(uncle.parentHash));
    if (parent === undefined) return `uncle ${hash}'s parent is not a recent ancestor`;
    const why = checkHeader(uncle, parent, rules, uncle.timestamp, hashesForMergedMining[i]!);
    if (why !== undefined) return `uncle ${hash}: ${why}`;
  }
  return undefined;
}
