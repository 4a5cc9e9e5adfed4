import { secp256k1 } from "@noble/curves/secp256k1.js";
import { keccak256 } from "./keccak.js";

const PREFIX = "\x19Ethereum Signed Message:\n";

/**
 * The hash `eth_sign` signs: keccak256("\x19Ethereum Signed Message:\n" + decimal byte length
 * + message), the standard prefix (the reference node's, and what ethers and web3.js verify).
 */
export function hashMessage(message: Uint8Array): Uint8Array {
  const prefix = new TextEncoder().encode(`${PREFIX}${message.length}`);
  const joined = new Uint8Array(prefix.length + message.length);
  joined.set(prefix);
  joined.set(message, prefix.length);
  return keccak256(joined);
}

/** Signs `message` as `eth_sign` does: 65 bytes r ‖ s ‖ v, low s, v = 27 or 28. */
export function signMessage(message: Uint8Array, privateKey: Uint8Array): Uint8Array {
  const sig = secp256k1.Signature.fromBytes(
    secp256k1.sign(hashMessage(message), privateKey, { prehash: false, format: "recovered" }),
    "recovered",
  );
  const out = new Uint8Array(65);
  out.set(sig.toBytes("compact"));
  out[64] = 27 + sig.recovery!;
  return out;
}

/** Whether `privateKey` is a valid secp256k1 secret key (32 bytes, 0 < k < n). */
export function isPrivateKey(privateKey: Uint8Array): boolean {
  return privateKey.length === 32 && secp256k1.utils.isValidSecretKey(privateKey);
}
