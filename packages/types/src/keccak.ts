import { keccak_256 } from "@noble/hashes/sha3.js";
import { createKeccak, type IHasher } from "hash-wasm";

/**
 * Keccak-256 runs in WebAssembly (hash-wasm) when the runtime instantiates it: five to ten
 * times faster than the JavaScript of `@noble/hashes` on the short inputs a node hashes all
 * the time (trie nodes, keys, headers, transactions). `@noble/hashes` is the fallback, with
 * the same answers (a test compares the two).
 */
let wasm: IHasher | undefined;
try {
  wasm = await createKeccak(256);
} catch {
  wasm = undefined;
}

/** Which implementation `keccak256` uses: `"wasm"` or `"noble"`. */
export const keccakBackend: "wasm" | "noble" = wasm === undefined ? "noble" : "wasm";

/**
 * Inputs up to V8's 64 bytes are copied here before hashing. V8 keeps such a typed array inside
 * its object, and hash-wasm reads the input through `.buffer`, which makes V8 move the array out
 * to a buffer of its own (a `malloc`, and bookkeeping the GC sweeps later) for every key, slot
 * and address hashed. The views of this buffer (allocated outside the heap) are made once.
 */
const SHORT_INPUT = 64;
const staging = new Uint8Array(new ArrayBuffer(SHORT_INPUT + 1));
const stagingViews = Array.from({ length: SHORT_INPUT + 1 }, (_, n) => staging.subarray(0, n));

/** Keccak-256 of `data` (a new 32-byte array). */
export const keccak256: (data: Uint8Array) => Uint8Array =
  wasm === undefined
    ? (data) => keccak_256(data)
    : (data) => {
        // One hasher for the whole process: JavaScript runs one hash at a time, and `init`
        // resets whatever an interrupted hash left.
        wasm.init();
        if (data.length <= SHORT_INPUT) {
          staging.set(data);
          wasm.update(stagingViews[data.length]!);
        } else {
          wasm.update(data);
        }
        return wasm.digest("binary");
      };

/** Keccak-256 with `@noble/hashes`, whatever `keccak256` uses (for tests and comparisons). */
export function keccak256Noble(data: Uint8Array): Uint8Array {
  return keccak_256(data);
}
