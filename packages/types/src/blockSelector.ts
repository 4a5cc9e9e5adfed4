import { type Hash32, parseHash } from "./data.js";
import { CodecError } from "./errors.js";
import { bytesToHex } from "./hex.js";
import { jsonTypeName, parseQuantity } from "./quantity.js";

export const BlockTag = {
  LATEST: "latest",
  EARLIEST: "earliest",
  PENDING: "pending",
  SAFE: "safe",
  FINALIZED: "finalized",
} as const;
export type BlockTag = (typeof BlockTag)[keyof typeof BlockTag];

const TAGS: ReadonlySet<string> = new Set(Object.values(BlockTag));

export type BlockSelector =
  | { readonly kind: "number"; readonly number: bigint }
  | { readonly kind: "tag"; readonly tag: BlockTag }
  | { readonly kind: "hash"; readonly hash: Hash32; readonly requireCanonical: boolean };

export function isBlockTag(value: unknown): value is BlockTag {
  return typeof value === "string" && TAGS.has(value);
}

const TAG_LIST = "latest, earliest, pending, safe, finalized";

/** A string quoted for an error message, cut at 80 characters. */
function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/** Whether the string starts like hex (`0x`, or `0X`, which the QUANTITY codec refuses by name). */
function looksHex(value: string): boolean {
  return value.charCodeAt(0) === 48 && (value.charCodeAt(1) | 0x20) === 120;
}

/** A TAG alone. */
export function parseBlockTag(value: unknown, arg = 0): BlockTag {
  if (isBlockTag(value)) return value;
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a block tag (${TAG_LIST}), got ${jsonTypeName(value)}`);
  throw new CodecError(arg, `invalid block tag ${quote(value)}, want ${TAG_LIST}`);
}

/** A QUANTITY block number (at most 64 bits) or a TAG: the form of eth_getBlockByNumber. */
export function parseBlockNumberOrTag(value: unknown, arg = 0): BlockSelector {
  if (typeof value !== "string") {
    throw new CodecError(arg, `expected a block number or tag, got ${jsonTypeName(value)}`);
  }
  if (isBlockTag(value)) return { kind: "tag", tag: value };
  if (!looksHex(value)) {
    throw new CodecError(
      arg,
      `invalid block tag ${quote(value)}, want ${TAG_LIST} or a hex block number`,
    );
  }
  return { kind: "number", number: parseQuantity(value, arg, { maxBits: 64 }) };
}

/** An own key whose value is not `undefined` (JSON has no `undefined`, so `null` counts). */
function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(obj, key) && obj[key] !== undefined;
}

/** Runs a nested parse, prefixing its reason with the field name. */
function field<T>(name: string, arg: number, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof CodecError) throw new CodecError(arg, `${name}: ${err.reason}`);
    throw err;
  }
}

/**
 * Every selector form: QUANTITY, TAG, a 32-byte block hash, and the EIP-1898 objects
 * `{blockHash, requireCanonical?}` and `{blockNumber}` (a QUANTITY or a TAG).
 */
export function parseBlockSelector(value: unknown, arg = 0): BlockSelector {
  if (typeof value === "string") {
    if (value.length === 66 && value.startsWith("0x")) {
      return { kind: "hash", hash: parseHash(value, arg), requireCanonical: false };
    }
    return parseBlockNumberOrTag(value, arg);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CodecError(
      arg,
      `expected a block number, tag, hash or object, got ${jsonTypeName(value)}`,
    );
  }
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (key !== "blockHash" && key !== "blockNumber" && key !== "requireCanonical") {
      throw new CodecError(arg, `unknown block selector field ${quote(key)}`);
    }
  }
  const hasHash = has(obj, "blockHash");
  const hasNumber = has(obj, "blockNumber");
  if (hasHash && hasNumber)
    throw new CodecError(arg, "cannot specify both blockHash and blockNumber, choose one");
  if (hasHash) {
    const canonical = obj.requireCanonical;
    if (canonical !== undefined && typeof canonical !== "boolean") {
      throw new CodecError(
        arg,
        `requireCanonical must be a boolean, got ${jsonTypeName(canonical)}`,
      );
    }
    const hash = field("blockHash", arg, () => parseHash(obj.blockHash, arg));
    return { kind: "hash", hash, requireCanonical: canonical === true };
  }
  if (hasNumber) {
    if (has(obj, "requireCanonical")) {
      throw new CodecError(arg, "requireCanonical is only allowed with blockHash");
    }
    return field("blockNumber", arg, () => parseBlockNumberOrTag(obj.blockNumber, arg));
  }
  throw new CodecError(arg, "a block selector object needs blockHash or blockNumber");
}

/** Short text of a selector for messages and logs: `0x1a`, `latest`, or the block hash. */
export function formatBlockSelector(sel: BlockSelector): string {
  switch (sel.kind) {
    case "number":
      return `0x${sel.number.toString(16)}`;
    case "tag":
      return sel.tag;
    case "hash":
      return bytesToHex(sel.hash);
  }
}
