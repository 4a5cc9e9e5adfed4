import { CodecError, encodeQuantity, parseQuantity } from "@nodex/types";
import { jsonType, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { DevControls } from "../services.js";

/**
 * A count of seconds or an id as test frameworks send it: a JSON number, a QUANTITY, or a
 * decimal string (Hardhat and Ganache helpers send all three).
 */
export function flexibleInteger(what: string) {
  return {
    name: what,
    optional: false,
    defaultValue: undefined,
    parse: (value: unknown, arg: number): bigint => {
      if (typeof value === "number") {
        if (!Number.isSafeInteger(value) || value < 0)
          throw new CodecError(arg, `${what} must be a non-negative integer, got ${value}`);
        return BigInt(value);
      }
      if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
      if (typeof value === "string") return parseQuantity(value, arg);
      throw new CodecError(
        arg,
        `expected ${what} as a number or a hex string, got ${jsonType(value)}`,
      );
    },
  };
}

const seconds = flexibleInteger("timestamp").parse;

interface MineRequest {
  readonly timestamp?: bigint;
  readonly blocks: bigint;
}

/**
 * `evm_mine`'s optional argument: a time (a number or QUANTITY of seconds), or Ganache's
 * `{timestamp, blocks}`.
 */
const mineRequest = {
  name: "timestamp",
  optional: true,
  defaultValue: { blocks: 1n } as MineRequest,
  parse: (value: unknown, arg: number): MineRequest => {
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      for (const key of Object.keys(o))
        if (key !== "timestamp" && key !== "blocks")
          throw new CodecError(arg, `unknown field ${JSON.stringify(key)}`);
      const blocks =
        o.blocks === undefined || o.blocks === null
          ? 1n
          : flexibleInteger("blocks").parse(o.blocks, arg);
      if (blocks < 1n) throw new CodecError(arg, "blocks: at least one block is mined");
      return o.timestamp === undefined || o.timestamp === null
        ? { blocks }
        : { blocks, timestamp: seconds(o.timestamp, arg) };
    }
    return { blocks: 1n, timestamp: seconds(value, arg) };
  },
};

/** `evm_setIntervalMining`'s interval: milliseconds, or Hardhat's `[min, max]` range. */
const intervalMs = {
  name: "interval",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): number => {
    if (Array.isArray(value)) {
      if (value.length !== 2)
        throw new CodecError(arg, "an interval range is [min, max] in milliseconds");
      const [min, max] = value.map((v) => flexibleInteger("interval").parse(v, arg)) as [
        bigint,
        bigint,
      ];
      if (min > max) throw new CodecError(arg, `interval range [${min}, ${max}]: min is above max`);
      // One interval for every block: the middle of the range.
      return Number((min + max) / 2n);
    }
    const ms = flexibleInteger("interval").parse(value, arg);
    if (ms > 86_400_000n) throw new CodecError(arg, `interval ${ms} ms is longer than a day`);
    return Number(ms);
  },
};

/** The development methods of the evm module (regtest and devnet), answered as the reference node answers them. */
export function evmModule(dev: DevControls) {
  return defineModule("evm", {
    snapshot: method({ params: [], result: r.quantity, handler: () => dev.snapshot() }),
    revert: method({
      params: [flexibleInteger("snapshot id")],
      result: r.boolean,
      handler: (_s, [id]) => dev.revert(id),
    }),
    reset: method({
      params: [],
      result: r.json,
      handler: async () => {
        await dev.reset();
        return null;
      },
    }),
    increaseTime: method({
      params: [flexibleInteger("seconds")],
      result: (offset: bigint) => encodeQuantity(offset),
      handler: (_s, [seconds]) => dev.increaseTime(seconds),
    }),
    mine: method({
      params: [mineRequest],
      result: r.json,
      handler: async (_s, [{ timestamp, blocks }]) => {
        await dev.mineBlock(timestamp);
        if (blocks > 1n) await dev.mineBlocks(blocks - 1n);
        return null;
      },
    }),
    setNextBlockTimestamp: method({
      params: [flexibleInteger("timestamp")],
      result: r.string,
      handler: (_s, [timestamp]) => {
        dev.setNextBlockTimestamp(timestamp);
        return timestamp.toString();
      },
    }),
    setAutomine: method({
      params: [p.boolean],
      result: r.boolean,
      handler: async (_s, [on]) => {
        await dev.setAutomine(on);
        return true;
      },
    }),
    setIntervalMining: method({
      params: [intervalMs],
      result: r.boolean,
      handler: async (_s, [ms]) => {
        await dev.setIntervalMining(ms);
        return true;
      },
    }),
    setBlockGasLimit: method({
      params: [flexibleInteger("gas limit")],
      result: r.boolean,
      handler: (_s, [gasLimit]) => {
        dev.setBlockGasLimit(gasLimit);
        return true;
      },
    }),
    startMining: method({
      params: [],
      result: r.json,
      handler: async () => {
        await dev.setMining(true);
        return null;
      },
    }),
    stopMining: method({
      params: [],
      result: r.json,
      handler: async () => {
        await dev.setMining(false);
        return null;
      },
    }),
  });
}
