import { recoverPublicKey } from "@nodex/types";

/**
 * `customCrypto.ecrecover` of `@ethereumjs/common`, used by the ECRECOVER precompile (0x01): the
 * public key (64 bytes) through `recoverPublicKey` of types, so the precompile and the senders
 * of transactions recover on the same backend (libsecp256k1 or noble) with the same answers.
 * It throws where `@ethereumjs/util`'s `ecrecover` throws, which the precompile answers with
 * empty output: a v other than 27, 28 (or 0, 1), r or s outside [1, n), no recoverable key.
 */
export function ecrecover(
  msgHash: Uint8Array,
  v: bigint,
  r: Uint8Array,
  s: Uint8Array,
  chainId?: bigint,
): Uint8Array {
  const recovery =
    v === 0n || v === 1n ? v : chainId === undefined ? v - 27n : v - (chainId * 2n + 35n);
  if (recovery !== 0n && recovery !== 1n) throw new Error("invalid signature v value");
  if (r.length > 32 || s.length > 32) throw new Error("invalid signature: r or s over 32 bytes");
  const signature = new Uint8Array(64);
  signature.set(r, 32 - r.length);
  signature.set(s, 64 - s.length);
  const publicKey = recoverPublicKey(msgHash, signature, Number(recovery));
  if (publicKey === undefined) throw new Error("invalid signature: no public key recovers");
  return publicKey;
}
