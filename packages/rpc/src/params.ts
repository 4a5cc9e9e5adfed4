import type { CallRequest } from "@nodex/evm";
import {
  type Address,
  type BlockSelector,
  bytesToHex,
  CodecError,
  type Hash32,
  parseAddress,
  parseBlockNumberOrTag,
  parseBlockSelector,
  parseData,
  parseHash,
  parseQuantity,
} from "@nodex/types";
import { parseCallObject } from "./callObject.js";
import { jsonType } from "./json.js";
import { type LogFilter, parseLogFilter } from "./logFilter.js";

export { jsonType };

/** `eth_getProof`'s storage keys: as 32 bytes, and as the request wrote them. */
export interface StorageKeys {
  readonly keys: Hash32[];
  readonly asked: readonly string[];
}

/** One positional parameter: how to decode it, and whether it may be left out. */
export interface ParamSpec<T> {
  readonly name: string;
  /** Decodes the raw JSON value; throws a `CodecError` naming `arg` when it is malformed. */
  readonly parse: (value: unknown, arg: number) => T;
  readonly optional: boolean;
  /** Used when an optional parameter is absent or `null`. */
  readonly defaultValue: T | undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: a list of specs of unrelated value types
export type AnyParamSpec = ParamSpec<any>;

/** The decoded argument tuple of a list of parameter specs. */
export type ParamValues<P extends readonly AnyParamSpec[]> = {
  -readonly [K in keyof P]: P[K] extends ParamSpec<infer T> ? T : never;
};

function required<T>(name: string, parse: (value: unknown, arg: number) => T): ParamSpec<T> {
  return { name, parse, optional: false, defaultValue: undefined };
}

function parseBoolean(value: unknown, arg: number): boolean {
  if (typeof value !== "boolean")
    throw new CodecError(arg, `expected a boolean, got ${jsonType(value)}`);
  return value;
}

function parseString(value: unknown, arg: number): string {
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a string, got ${jsonType(value)}`);
  return value;
}

/** Parameter specs built on the codecs of `@nodex/types`. */
export const p = {
  quantity: required<bigint>("quantity", (v, arg) => parseQuantity(v, arg)),
  data: required<Uint8Array>("data", (v, arg) => parseData(v, arg)),
  address: required<Address>("address", parseAddress),
  hash: required<Hash32>("hash", parseHash),
  boolean: required<boolean>("boolean", parseBoolean),
  string: required<string>("string", parseString),
  blockSelector: required<BlockSelector>("block", parseBlockSelector),
  blockNumberOrTag: required<BlockSelector>("block", parseBlockNumberOrTag),
  callObject: required<CallRequest>("call", parseCallObject),
  /** A storage position: a QUANTITY, or 32 bytes of DATA as geth also accepts. */
  storageSlot: required<bigint>("position", (v, arg) => {
    if (typeof v === "string" && v.length === 66 && v.startsWith("0x")) {
      return BigInt(bytesToHex(parseHash(v, arg)));
    }
    return parseQuantity(v, arg);
  }),
  /**
   * Up to 32 bytes each, of any hex length (`0x0`, `0x1`), left-padded as geth does; `asked`
   * keeps each key as the request wrote it, which geth answers back.
   */
  storageKeys: required<StorageKeys>("storage keys", (v, arg) => {
    if (!Array.isArray(v))
      throw new CodecError(arg, `expected an array of storage keys, got ${jsonType(v)}`);
    const keys = v.map((key, i) => {
      try {
        return parseStorageKey(key, arg);
      } catch (err) {
        if (err instanceof CodecError)
          throw new CodecError(arg, `storageKeys[${i}]: ${err.reason}`);
        throw err;
      }
    });
    return { keys, asked: v as string[] };
  }),
  logFilter: required<LogFilter>("filter", (v, arg) => parseLogFilter(v, arg)),

  /** Makes a parameter optional; absent or `null` decodes to `defaultValue`. */
  optional<T>(spec: ParamSpec<T>, defaultValue: T): ParamSpec<T> {
    return { ...spec, optional: true, defaultValue };
  },
} as const;

/**
 * Decodes positional parameters against their specs. Errors use the wording geth users
 * know: `missing value for required argument 1`, `too many arguments, want at most 2`.
 */
export function decodeParams(
  specs: readonly AnyParamSpec[],
  params: readonly unknown[],
): CodecErrorOr<unknown[]> {
  if (params.length > specs.length) {
    return { error: `too many arguments, want at most ${specs.length}` };
  }
  const out = new Array<unknown>(specs.length);
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i]!;
    const raw = i < params.length ? params[i] : undefined;
    if (raw === undefined || (raw === null && spec.optional)) {
      if (!spec.optional) return { error: `missing value for required argument ${i}` };
      out[i] = spec.defaultValue;
      continue;
    }
    out[i] = spec.parse(raw, i);
  }
  return { value: out };
}

export type CodecErrorOr<T> =
  | { value: T; error?: undefined }
  | { error: string; value?: undefined };

/** A storage key of `eth_getProof`: `0x` and at most 64 hex digits, left-padded to 32 bytes. */
function parseStorageKey(value: unknown, arg: number): Hash32 {
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a hex string, got ${jsonType(value)}`);
  if (!/^0[xX]/.test(value)) throw new CodecError(arg, "hex string without 0x prefix");
  const digits = value.slice(2);
  if (!/^[0-9a-fA-F]*$/.test(digits)) throw new CodecError(arg, "invalid hex string");
  if (digits.length > 64)
    throw new CodecError(
      arg,
      `hex string too long: ${Math.ceil(digits.length / 2)} bytes, want at most 32`,
    );
  return parseData(`0x${digits.padStart(64, "0")}`, arg, { size: 32 }) as Hash32;
}
