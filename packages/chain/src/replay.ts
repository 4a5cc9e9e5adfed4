import type { BlockContext, ExecutionTracer, Executor } from "@nodex/evm";
import type { Address, SignedTransaction } from "@nodex/types";
import type { StoredBlock } from "./blockStore.js";
import type { Chain } from "./chain.js";
import { ChainError, ChainErrorCode } from "./errors.js";

/** A transaction of a block and the tracer that heard it run. */
export interface TracedTransaction<T> {
  readonly tx: SignedTransaction;
  readonly index: number;
  readonly tracer: T;
}

/**
 * Runs `block`'s transactions again on its parent's state, as the block was executed, with a
 * tracer (from `tracerFor`) on those of `only` (every one when absent); the transactions after
 * the last traced one are not run. Nothing is written. Throws `ChainError` `STATE_MISSING` when
 * the parent's state is no longer kept.
 */
export async function replayBlock<T extends ExecutionTracer>(
  chain: Chain,
  executor: Executor,
  block: StoredBlock,
  tracerFor: (tx: SignedTransaction, index: number) => T,
  only?: number,
): Promise<TracedTransaction<T>[]> {
  const { header, transactions } = block.block;
  if (transactions.length === 0) return [];
  const parent = await chain.getHeaderByHash(header.parentHash);
  if (parent === undefined) {
    throw new ChainError(
      ChainErrorCode.STATE_MISSING,
      `state of block ${header.number - 1n} is not available`,
    );
  }
  const state = await chain.stateAt(parent);
  const ctx: BlockContext = {
    number: header.number,
    timestamp: header.timestamp,
    coinbase: header.coinbase as Address,
    gasLimit: header.gasLimit,
    difficulty: header.difficulty,
    minimumGasPrice: header.minimumGasPrice,
    blockHash: chain.ancestorHashes(parent),
  };
  const last = only ?? transactions.length - 1;
  const traced: TracedTransaction<T>[] = [];
  let gasUsed = 0n;
  for (let index = 0; index <= last; index++) {
    const tx = transactions[index]!;
    const tracer = only === undefined || only === index ? tracerFor(tx, index) : undefined;
    const outcome = await executor.executeTransaction(state, tx, ctx, gasUsed, tracer);
    gasUsed = outcome.cumulativeGasUsed;
    if (tracer !== undefined) traced.push({ tx, index, tracer });
  }
  return traced;
}
