import { CodecError, encodeQuantity, parseQuantity } from "@nodex/types";
import { jsonType } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { DevControls } from "../services.js";

/**
 * A count of seconds or an id as test frameworks send it: a JSON number, a QUANTITY, or a
 * decimal string (Hardhat and Ganache helpers send all three).
 */
function flexibleInteger(what: string) {
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

/** `evm_mine`'s optional time: a number or QUANTITY of seconds, or Ganache's `{timestamp}`. */
const mineTimestamp = {
  name: "timestamp",
  optional: true,
  defaultValue: undefined as bigint | undefined,
  parse: (value: unknown, arg: number): bigint | undefined => {
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      for (const key of Object.keys(o))
        if (key !== "timestamp" && key !== "blocks")
          throw new CodecError(arg, `unknown field ${JSON.stringify(key)}`);
      if (o.blocks !== undefined && o.blocks !== 1 && o.blocks !== "0x1")
        throw new CodecError(arg, "only one block at a time can be mined");
      return o.timestamp === undefined ? undefined : seconds(o.timestamp, arg);
    }
    return seconds(value, arg);
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
      params: [mineTimestamp],
      result: r.json,
      handler: async (_s, [timestamp]) => {
        await dev.mineBlock(timestamp);
        return null;
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
