import { type CallRequest, intrinsicGas } from "@nodex/evm";
import {
  type AccessListEntry,
  CodecError,
  dynamicFeeGasPrice,
  parseAddress,
  parseData,
  parseHash,
  parseQuantity,
  rlpEncode,
} from "@nodex/types";
import { jsonType } from "./json.js";

/**
 * Decodes a transaction call object (`eth_call`, `eth_estimateGas`): `from`, `to`, `gas`,
 * `gasPrice`, `value`, `data` (alias `input`), and a typed transaction's `maxFeePerGas`,
 * `maxPriorityFeePerGas` (the gas price is then the lower of the two, as RSKIP546 prices type 2)
 * and `accessList` (checked; its RLP length counts in the intrinsic gas, 80 gas a byte;
 * `accessListBytes` is 0 for a transaction said to be legacy, and left out when the list is
 * unknown). Fields it does not use (`nonce`, `chainId`, …) are ignored, as geth does.
 */
export function parseCallObject(value: unknown, arg: number): CallRequest {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CodecError(arg, `expected a call object, got ${jsonType(value)}`);
  }
  const o = value as Record<string, unknown>;
  const field = fieldReader(o, arg);
  const data = field("data", parseData);
  const input = field("input", parseData);
  if (data !== undefined && input !== undefined && Buffer.compare(data, input) !== 0) {
    throw new CodecError(arg, "data and input are both given and differ");
  }
  const from = field("from", parseAddress);
  const gas = field("gas", (v, a) => parseQuantity(v, a, { maxBits: 64 }));
  const maxFeePerGas = field("maxFeePerGas", parseQuantity);
  const maxPriorityFeePerGas = field("maxPriorityFeePerGas", parseQuantity);
  const gasPrice =
    field("gasPrice", parseQuantity) ??
    (maxFeePerGas === undefined && maxPriorityFeePerGas === undefined
      ? undefined
      : dynamicFeeGasPrice(
          maxPriorityFeePerGas ?? maxFeePerGas!,
          maxFeePerGas ?? maxPriorityFeePerGas!,
        ));
  const accessList = field("accessList", parseAccessList);
  const type = field("type", (v, a) => parseQuantity(v, a, { maxBits: 8 }));
  // A transaction said to be legacy (type 0, or a gas price without the fee fields) carries no
  // access list; of the others the list is unknown when absent (see `estimateGas`).
  const legacy =
    type === 0n ||
    (type === undefined &&
      o.gasPrice !== undefined &&
      o.gasPrice !== null &&
      maxFeePerGas === undefined &&
      maxPriorityFeePerGas === undefined &&
      accessList === undefined);
  const callValue = field("value", parseQuantity);
  const payload = data ?? input;
  return {
    to: field("to", parseAddress) ?? null,
    ...(from === undefined ? {} : { from }),
    ...(gas === undefined ? {} : { gas }),
    ...(gasPrice === undefined ? {} : { gasPrice }),
    ...(callValue === undefined ? {} : { value: callValue }),
    ...(payload === undefined ? {} : { data: payload }),
    ...(accessList !== undefined
      ? { accessListBytes: accessListBytes(accessList) }
      : legacy
        ? { accessListBytes: 0 }
        : {}),
  };
}

/**
 * Reads the fields of the object argument `arg`: a field absent or `null` is `undefined`, and
 * a codec's refusal names the field (`gas: …`).
 */
export function fieldReader(
  o: Record<string, unknown>,
  arg: number,
): <T>(name: string, parse: (v: unknown, a: number) => T) => T | undefined {
  return (name, parse) => {
    const v = o[name];
    if (v === undefined || v === null) return undefined;
    try {
      return parse(v, arg);
    } catch (err) {
      if (err instanceof CodecError) throw new CodecError(arg, `${name}: ${err.reason}`);
      throw err;
    }
  };
}

/** The bytes of the RLP of an access list, as a typed transaction would carry it. */
export function accessListBytes(list: readonly AccessListEntry[]): number {
  return rlpEncode(list.map((e) => [e.address, [...e.storageKeys]])).length;
}

/** An access list: `[{address, storageKeys: [32-byte keys]}]`, as EIP-2930 writes it. */
export function parseAccessList(value: unknown, arg: number): AccessListEntry[] {
  if (!Array.isArray(value))
    throw new CodecError(
      arg,
      `expected an array of {address, storageKeys}, got ${jsonType(value)}`,
    );
  return value.map((entry, i) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw new CodecError(
        arg,
        `entry ${i}: expected {address, storageKeys}, got ${jsonType(entry)}`,
      );
    const { address, storageKeys } = entry as Record<string, unknown>;
    const keys = storageKeys ?? [];
    if (!Array.isArray(keys))
      throw new CodecError(arg, `entry ${i}: storageKeys must be an array, got ${jsonType(keys)}`);
    try {
      return {
        address: parseAddress(address, arg),
        storageKeys: keys.map((key) => parseHash(key, arg)),
      };
    } catch (err) {
      if (err instanceof CodecError) throw new CodecError(arg, `entry ${i}: ${err.reason}`);
      throw err;
    }
  });
}

/**
 * Refuses (-32602) a call whose `gas` does not cover its intrinsic gas (`debug_traceCall`,
 * `eth_createAccessList`: a trace of a run that cannot start tells nothing).
 */
export function checkCallGas(req: CallRequest, arg = 0): void {
  if (req.gas === undefined) return;
  const intrinsic = intrinsicGas({
    to: req.to,
    data: req.data ?? new Uint8Array(),
    accessListBytes: req.accessListBytes ?? 0,
  });
  if (req.gas < intrinsic)
    throw new CodecError(arg, `gas: intrinsic gas too low: have ${req.gas}, want ${intrinsic}`);
}
