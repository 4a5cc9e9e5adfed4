import { sha256 } from "@noble/hashes/sha2.js";

/** SHA-256(SHA-256(data)), raw digest order (Bitcoin's txids, Merkle nodes and block hashes). */
export function doubleSha256(data: Uint8Array): Uint8Array {
  return sha256(sha256(data));
}

/** Merkle node: double-SHA256 of `left ‖ right` (both 32 bytes, raw order). */
export function hashPair(left: Uint8Array, right: Uint8Array): Uint8Array {
  const buf = new Uint8Array(64);
  buf.set(left);
  buf.set(right, 32);
  return doubleSha256(buf);
}
