import { doubleSha256Of64, sha256 } from "./sha256.js";

/** SHA-256(SHA-256(data)), raw digest order (Bitcoin's txids, Merkle nodes and block hashes). */
export function doubleSha256(data: Uint8Array): Uint8Array {
  return data.length === 64 ? doubleSha256Of64(data) : sha256(sha256(data));
}

const PAIR = new Uint8Array(64);

/** Merkle node: double-SHA256 of `left ‖ right` (both 32 bytes, raw order). */
export function hashPair(left: Uint8Array, right: Uint8Array): Uint8Array {
  PAIR.set(left);
  PAIR.set(right, 32);
  return doubleSha256Of64(PAIR);
}
