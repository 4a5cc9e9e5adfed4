import type { CallRequest } from "@nodex/evm";
import { CodecError, parseAddress, parseData, parseQuantity } from "@nodex/types";
import { jsonType } from "./json.js";

/**
 * Decodes a transaction call object (`eth_call`, `eth_estimateGas`): `from`, `to`, `gas`,
 * `gasPrice`, `value`, `data` (alias `input`). Fields it does not use (`type`, `nonce`,
 * `chainId`, …) are ignored, as geth does.
 */
export function parseCallObject(value: unknown, arg: number): CallRequest {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CodecError(arg, `expected a call object, got ${jsonType(value)}`);
  }
  const o = value as Record<string, unknown>;
  const field = <T>(name: string, parse: (v: unknown, a: number) => T): T | undefined => {
    const v = o[name];
    if (v === undefined || v === null) return undefined;
    try {
      return parse(v, arg);
    } catch (err) {
      throw new CodecError(arg, `${name}: ${(err as CodecError).reason}`);
    }
  };
  const data = field("data", parseData);
  const input = field("input", parseData);
  if (data !== undefined && input !== undefined && Buffer.compare(data, input) !== 0) {
    throw new CodecError(arg, "data and input are both given and differ");
  }
  const from = field("from", parseAddress);
  const gas = field("gas", (v, a) => parseQuantity(v, a, { maxBits: 64 }));
  const gasPrice = field("gasPrice", parseQuantity);
  const callValue = field("value", parseQuantity);
  const payload = data ?? input;
  return {
    to: field("to", parseAddress) ?? null,
    ...(from === undefined ? {} : { from }),
    ...(gas === undefined ? {} : { gas }),
    ...(gasPrice === undefined ? {} : { gasPrice }),
    ...(callValue === undefined ? {} : { value: callValue }),
    ...(payload === undefined ? {} : { data: payload }),
  };
}
