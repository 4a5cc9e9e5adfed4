import { createRequire } from "node:module";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToBigintBE } from "./bytes.js";

/**
 * Public-key recovery of secp256k1 signatures, on one of two backends with the same answers:
 * `libsecp256k1` (the native addon of the `secp256k1` package, about 25 times faster) when it
 * loads and passes a self-test, `@noble/curves` otherwise or when asked for.
 */
export const SignatureRecoveryBackend = {
  LIBSECP256K1: "libsecp256k1",
  NOBLE: "noble",
} as const;
export type SignatureRecoveryBackend =
  (typeof SignatureRecoveryBackend)[keyof typeof SignatureRecoveryBackend];

/** Which backend recovers signatures, and why noble when it is noble. */
export interface SignatureRecoveryInfo {
  readonly backend: SignatureRecoveryBackend;
  readonly reason?: string;
}

/** `auto`: libsecp256k1 when its addon loads and passes the self-test; `noble`: always noble. */
export type SignatureRecoveryPreference = "auto" | "noble";

/** The native addon's recovery: writes the 65-byte uncompressed key into `output`. */
interface NativeSecp256k1 {
  ecdsaRecover(
    sig: Uint8Array,
    recid: number,
    msg32: Uint8Array,
    compressed: boolean,
    output: Uint8Array,
  ): Uint8Array;
}

type Recover = (
  hash: Uint8Array,
  signature: Uint8Array,
  recovery: number,
) => Uint8Array | undefined;

let precomputed = false;

/**
 * Precomputes multiples of the generator (about 130 ms, once per thread): every noble recovery
 * is then about 10 % cheaper, and signing too. Made by the first noble recovery; a thread that
 * signs or recovers with noble from its start (the node's main thread) calls it before it
 * serves, and one that never does (a worker thread that reads stored senders) never pays it.
 */
export function precomputeSecp256k1(): void {
  if (precomputed) return;
  precomputed = true;
  secp256k1.Point.BASE.precompute(8, false);
}

function recoverNoble(
  hash: Uint8Array,
  signature: Uint8Array,
  recovery: number,
): Uint8Array | undefined {
  if (!validInput(hash, signature, recovery)) return undefined;
  precomputeSecp256k1();
  try {
    // The constructor refuses r and s outside [1, n).
    const r = bytesToBigintBE(signature.subarray(0, 32));
    const s = bytesToBigintBE(signature.subarray(32));
    return new secp256k1.Signature(r, s, recovery)
      .recoverPublicKey(hash)
      .toBytes(false)
      .subarray(1);
  } catch {
    return undefined;
  }
}

function nativeRecover(native: NativeSecp256k1): Recover {
  // The addon reads its inputs and writes the key during the call, through views of one buffer
  // outside V8's heap: a signature or hash handed over as it is (an array of 64 bytes or fewer,
  // kept inside its object) would first be moved out of the heap, a malloc each.
  const staging = new ArrayBuffer(256);
  const stagedSignature = new Uint8Array(staging, 0, 64);
  const stagedHash = new Uint8Array(staging, 64, 32);
  const output = new Uint8Array(staging, 128, 65);
  return (hash, signature, recovery) => {
    if (!validInput(hash, signature, recovery)) return undefined;
    stagedSignature.set(signature);
    stagedHash.set(hash);
    try {
      // libsecp256k1 refuses r and s outside [1, n) and points it cannot recover.
      native.ecdsaRecover(stagedSignature, recovery, stagedHash, false, output);
    } catch {
      return undefined;
    }
    return output.slice(1);
  };
}

function validInput(hash: Uint8Array, signature: Uint8Array, recovery: number): boolean {
  return hash.length === 32 && signature.length === 64 && (recovery === 0 || recovery === 1);
}

/**
 * Loads the addon the way the package's own index tries first (`bindings.js`: node-gyp-build
 * finds a build or a prebuild), and never its pure-JS fallback (elliptic).
 */
function loadNative(): NativeSecp256k1 | string {
  try {
    const require = createRequire(import.meta.url);
    return require("secp256k1/bindings.js") as NativeSecp256k1;
  } catch (err) {
    return `the secp256k1 addon did not load: ${(err as Error).message.split("\n")[0]}`;
  }
}

/** A signature of a fixed key, recovered by `recover` and compared with noble's answers. */
function selfTest(recover: Recover): string | undefined {
  const key = new Uint8Array(32).fill(7);
  const hash = new Uint8Array(32).fill(0xab);
  const sig = secp256k1.Signature.fromBytes(
    secp256k1.sign(hash, key, { prehash: false, format: "recovered" }),
    "recovered",
  );
  const expected = secp256k1.getPublicKey(key, false).subarray(1);
  const got = recover(hash, sig.toBytes("compact"), sig.recovery!);
  if (got === undefined || !sameBytes(got, expected)) return "the self-test recovered a wrong key";
  const zeroR = sig.toBytes("compact");
  zeroR.fill(0, 0, 32);
  if (recover(hash, zeroR, sig.recovery!) !== undefined) {
    return "the self-test recovered a key from r = 0";
  }
  return undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

let selected: { info: SignatureRecoveryInfo; recover: Recover } | undefined;
let nativeLoad: { recover: Recover } | string | undefined;

function native(): { recover: Recover } | string {
  if (nativeLoad === undefined) {
    const loaded = loadNative();
    if (typeof loaded === "string") {
      nativeLoad = loaded;
    } else {
      const recover = nativeRecover(loaded);
      const failure = (() => {
        try {
          return selfTest(recover);
        } catch (err) {
          return `the self-test threw: ${(err as Error).message}`;
        }
      })();
      nativeLoad = failure ?? { recover };
    }
  }
  return nativeLoad;
}

/**
 * Chooses the backend of every later recovery (the node calls it once, at start-up, with
 * `NODEX_SECP256K1`); returns what is in use. Without a call, the first recovery chooses `auto`.
 */
export function selectSignatureRecovery(
  preference: SignatureRecoveryPreference = "auto",
): SignatureRecoveryInfo {
  if (preference === "noble") {
    selected = {
      info: { backend: SignatureRecoveryBackend.NOBLE, reason: "noble was asked for" },
      recover: recoverNoble,
    };
  } else {
    const loaded = native();
    selected =
      typeof loaded === "string"
        ? {
            info: { backend: SignatureRecoveryBackend.NOBLE, reason: loaded },
            recover: recoverNoble,
          }
        : { info: { backend: SignatureRecoveryBackend.LIBSECP256K1 }, recover: loaded.recover };
  }
  return selected.info;
}

/** The backend in use (chosen with `auto` if nothing was chosen yet). */
export function signatureRecovery(): SignatureRecoveryInfo {
  if (selected === undefined) selectSignatureRecovery("auto");
  return selected!.info;
}

/**
 * The public key (64 bytes, x ‖ y) that signed the 32-byte `hash` with `signature` (64 bytes,
 * r ‖ s, big-endian) and `recovery` (0 or 1), or `undefined` when none does: r or s outside
 * [1, n), r not the x of a curve point, a point at infinity, another recovery id, wrong lengths.
 * High s is accepted here: callers that require low s check it themselves.
 *
 * `backend` picks one for a comparison; without it, the one `selectSignatureRecovery` chose.
 */
export function recoverPublicKey(
  hash: Uint8Array,
  signature: Uint8Array,
  recovery: number,
  backend?: SignatureRecoveryBackend,
): Uint8Array | undefined {
  if (backend === undefined) {
    if (selected === undefined) selectSignatureRecovery("auto");
    return selected!.recover(hash, signature, recovery);
  }
  if (backend === SignatureRecoveryBackend.NOBLE) return recoverNoble(hash, signature, recovery);
  const loaded = native();
  if (typeof loaded === "string") throw new Error(loaded);
  return loaded.recover(hash, signature, recovery);
}
