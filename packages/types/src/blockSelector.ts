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

export function parseBlockTag(value: unknown, arg = 0): BlockTag {
  if (isBlockTag(value)) return value;
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a block tag (${TAG_LIST}), got ${jsonTypeName(value)}`);
  throw new CodecError(arg, `invalid block tag ${JSON.stringify(value)}, want ${TAG_LIST}`);
}

/** A QUANTITY block number or a TAG (the form of eth_getBlockByNumber). */
export function parseBlockNumberOrTag(value: unknown, arg = 0): BlockSelector {
  if (typeof value !== "string") {
    throw new CodecError(arg, `expected a block number or tag, got ${jsonTypeName(value)}`);
  }
  if (isBlockTag(value)) return { kind: "tag", tag: value };
  if (!value.startsWith("0x")) {
    throw new CodecError(
      arg,
      `invalid block tag ${JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)}, want ${TAG_LIST} or a hex block number`,
    );
  }
  return { kind: "number", number: parseQuantity(value, arg, { maxBits: 64 }) };
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
      throw new CodecError(arg, `unknown block selector field ${JSON.stringify(key)}`);
    }
  }
  const hasHash = obj.blockHash !== undefined;
  const hasNumber = obj.blockNumber !== undefined;
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
    let hash: Hash32;
    try {
      hash = parseHash(obj.blockHash, arg);
    } catch (err) {
      throw new CodecError(arg, `blockHash: ${(err as CodecError).reason}`);
    }
    return { kind: "hash", hash, requireCanonical: canonical === true };
  }
  if (hasNumber) {
    if (obj.requireCanonical !== undefined) {
      throw new CodecError(arg, "requireCanonical is only allowed with blockHash");
    }
    try {
      return parseBlockNumberOrTag(obj.blockNumber, arg);
    } catch (err) {
      throw new CodecError(arg, `blockNumber: ${(err as CodecError).reason}`);
    }
  }
  throw new CodecError(arg, "a block selector object needs blockHash or blockNumber");
}

/** Short text of a selector for messages and logs. */
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
