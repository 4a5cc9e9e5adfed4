import { bigintToBytes, rlpEncode } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeStatus, encodeStatus, type Status, statusMismatch } from "../../src/status.js";

const status: Status = {
  networkId: 33,
  genesisHash: new Uint8Array(32).fill(1),
  bestHash: new Uint8Array(32).fill(2),
  bestNumber: 12n,
  totalDifficulty: 1_000_000n,
};

describe("status", () => {
  it("round-trips through its RLP form", () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }),
        (networkId, genesisHash, bestHash, bestNumber, totalDifficulty) => {
          const s = { networkId, genesisHash, bestHash, bestNumber, totalDifficulty };
          expect(decodeStatus(encodeStatus(s))).toEqual(s);
        },
      ),
    );
  });

  it("refuses malformed statuses with DecodeError", () => {
    const fields = [
      bigintToBytes(33n),
      status.genesisHash,
      status.bestHash,
      bigintToBytes(12n),
      bigintToBytes(1n),
    ];
    const bad = [
      new Uint8Array([0xc0]),
      rlpEncode(fields.slice(0, 4)),
      rlpEncode([...fields.slice(0, 1), new Uint8Array(31), ...fields.slice(2)]),
      rlpEncode([Uint8Array.of(0, 33), ...fields.slice(1)]),
      rlpEncode([...fields.slice(0, 3), new Uint8Array(9).fill(1), fields[4]!]),
      Uint8Array.of(0xff),
    ];
    for (const bytes of bad) expect(() => decodeStatus(bytes)).toThrow(/invalid/);
  });

  it("names a mismatch of network id or genesis, and accepts any head", () => {
    expect(statusMismatch(status, { ...status, bestNumber: 0n, totalDifficulty: 1n })).toBe(
      undefined,
    );
    expect(statusMismatch(status, { ...status, networkId: 34 })).toBe("network id 34, ours is 33");
    expect(statusMismatch(status, { ...status, genesisHash: new Uint8Array(32) })).toMatch(
      /^genesis 0x0{64}, ours is 0x(01){32}$/,
    );
  });
});
