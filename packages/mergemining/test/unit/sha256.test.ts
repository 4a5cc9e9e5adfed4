import { createHash } from "node:crypto";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256, sha256FromMidstate, sha256Midstate } from "../../src/sha256.js";
import { hex, toHex } from "./vectors.js";

describe("own SHA-256", () => {
  it("FIPS 180-2 examples", () => {
    expect(toHex(sha256(new TextEncoder().encode("abc")))).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
    expect(toHex(sha256(new Uint8Array(0)))).toBe(
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    );
    expect(
      toHex(
        sha256(
          new TextEncoder().encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        ),
      ),
    ).toBe("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  });

  it("agrees with @noble/hashes and node:crypto on any input up to 300 bytes (every padding case)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (b) => {
        const ours = toHex(sha256(b));
        expect(ours).toBe(toHex(nobleSha256(b)));
        expect(ours).toBe(createHash("sha256").update(b).digest("hex"));
      }),
    );
  });

  it("midstate after k blocks, resumed over the rest, gives the hash of the whole message", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.nat(), (b, k) => {
        const cut = 64 * (k % (Math.floor(b.length / 64) + 1));
        const mid = sha256Midstate(b.subarray(0, cut));
        expect(toHex(sha256FromMidstate(mid, BigInt(cut), b.subarray(cut)))).toBe(
          toHex(nobleSha256(b)),
        );
      }),
    );
  });

  it("the midstate of nothing is the initial state", () => {
    expect(toHex(sha256Midstate(new Uint8Array(0)))).toBe(
      "6a09e667bb67ae853c6ef372a54ff53a510e527f9b05688c1f83d9ab5be0cd19",
    );
  });

  it("rejects a prefix or hashed length that is not whole blocks", () => {
    expect(() => sha256Midstate(new Uint8Array(65))).toThrow(/64-byte blocks/);
    expect(() => sha256FromMidstate(new Uint8Array(32), 63n, new Uint8Array(0))).toThrow(
      /multiple of 64/,
    );
    expect(() => sha256FromMidstate(hex("00"), 0n, new Uint8Array(0))).toThrow(/32 bytes/);
  });
});
