import type { StoredBlock } from "@nodex/chain";
import { type BlockSelector, CodecError, encodeQuantity, parseQuantity } from "@nodex/types";
import { RPCError, RPCErrorCode } from "../errors.js";
import type { ParamSpec } from "../params.js";
import { jsonType } from "../params.js";
import type { ChainReaderService } from "../services.js";

/** The most blocks one `eth_feeHistory` covers, as geth's default `rpc.feehistory.maxblockcount`. */
export const FEE_HISTORY_MAX_BLOCKS = 1024n;

/** `blockCount`: a QUANTITY or a JSON number, as geth takes it. */
export const blockCount: ParamSpec<bigint> = {
  name: "block count",
  parse: (value, arg) => {
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value) || value < 0)
        throw new CodecError(arg, `expected a non-negative integer, got ${value}`);
      return BigInt(value);
    }
    return parseQuantity(value, arg, { maxBits: 64 });
  },
  optional: false,
  defaultValue: undefined,
};

/** `rewardPercentiles`: numbers from 0 to 100, each at least the one before (geth's rule). */
export const rewardPercentiles: ParamSpec<readonly number[] | undefined> = {
  name: "reward percentiles",
  parse: (value, arg) => {
    if (!Array.isArray(value))
      throw new CodecError(arg, `expected an array of percentiles, got ${jsonType(value)}`);
    return value.map((p, i) => {
      if (typeof p !== "number" || !Number.isFinite(p) || p < 0 || p > 100)
        throw new CodecError(arg, `invalid reward percentile ${JSON.stringify(p)}: want 0 to 100`);
      if (i > 0 && p < (value[i - 1] as number))
        throw new CodecError(
          arg,
          `invalid reward percentile: #${i - 1}:${value[i - 1]} > #${i}:${p}`,
        );
      return p;
    });
  },
  optional: true,
  defaultValue: undefined,
};

/**
 * `eth_feeHistory` on a chain without a base fee: every `baseFeePerGas` (and blob base fee) is
 * 0, and a transaction's whole gas price is its priority fee. `reward[i][j]` is the gas price
 * below which the block's transactions used `percentiles[j]` % of its gas (geth's rule, each
 * transaction weighted by its gas); a block without transactions answers its minimum gas price,
 * the least a transaction had to pay there (geth answers 0), so that a wallet that prices from
 * the history never offers less.
 */
export async function feeHistory(
  reader: ChainReaderService,
  count: bigint,
  newest: BlockSelector,
  percentiles: readonly number[] | undefined,
): Promise<Record<string, unknown>> {
  const last = await reader.resolve(newest);
  if (last === null)
    throw new RPCError(
      RPCErrorCode.INVALID_PARAMS,
      newest.kind === "number"
        ? `block 0x${newest.number.toString(16)} not found`
        : "block not found",
    );
  if (count === 0n) return { oldestBlock: "0x0", baseFeePerGas: [], gasUsedRatio: [] };
  const lastNumber = last.block.header.number;
  const span = count > FEE_HISTORY_MAX_BLOCKS ? FEE_HISTORY_MAX_BLOCKS : count;
  // Not below the chain's first block (genesis, or an anchored chain's anchor).
  const first = reader.firstNumber ?? 0n;
  const oldest = lastNumber + 1n - span > first ? lastNumber + 1n - span : first;
  const blocks: StoredBlock[] = [];
  for (let n = oldest; n < lastNumber; n++) {
    const block = await reader.resolve({ kind: "number", number: n });
    if (block !== null) blocks.push(block);
  }
  blocks.push(last);
  const gasUsedRatio: number[] = [];
  const reward: string[][] = [];
  for (const block of blocks) {
    const { header } = block.block;
    gasUsedRatio.push(
      header.gasLimit === 0n ? 0 : Number(header.gasUsed) / Number(header.gasLimit),
    );
    if (percentiles !== undefined) reward.push(await blockRewards(reader, block, percentiles));
  }
  const zeros = new Array(blocks.length + 1).fill("0x0");
  return {
    oldestBlock: encodeQuantity(oldest),
    baseFeePerGas: zeros,
    gasUsedRatio,
    baseFeePerBlobGas: zeros,
    blobGasUsedRatio: new Array(blocks.length).fill(0),
    ...(percentiles === undefined ? {} : { reward }),
  };
}

async function blockRewards(
  reader: ChainReaderService,
  block: StoredBlock,
  percentiles: readonly number[],
): Promise<string[]> {
  const { header, transactions } = block.block;
  if (transactions.length === 0 || header.gasUsed === 0n)
    return percentiles.map(() => encodeQuantity(header.minimumGasPrice));
  const receipts = await reader.blockReceipts(block);
  const sorted = receipts
    .map((r) => ({ price: r.tx.gasPrice, gas: r.gasUsed }))
    .sort((a, b) => (a.price < b.price ? -1 : a.price > b.price ? 1 : 0));
  const out: string[] = [];
  let at = 0;
  let sum = sorted[0]!.gas;
  for (const p of percentiles) {
    const threshold = (Number(header.gasUsed) * p) / 100;
    while (Number(sum) < threshold && at < sorted.length - 1) {
      at++;
      sum += sorted[at]!.gas;
    }
    out.push(encodeQuantity(sorted[at]!.price));
  }
  return out;
}
