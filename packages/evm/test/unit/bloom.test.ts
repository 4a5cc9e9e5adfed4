import { hexToBytes, keccak256, type Log } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bloomBits, bloomHasBits, bloomMayContain, logsBloom, orBloom } from "../../src/index.js";

const log = (address: Uint8Array, topics: Uint8Array[]): Log =>
  ({ address, topics, data: new Uint8Array() }) as unknown as Log;

describe("logs bloom", () => {
  it("sets exactly the three bits taken from keccak256 of each value", () => {
    // One log of address 0x…01 with no topics: three bits from keccak256 of the address.
    const address = hexToBytes("0x0000000000000000000000000000000000000001");
    const bloom = logsBloom([log(address, [])]);
    const hash = keccak256(address);
    const bits = [0, 2, 4].map((i) => ((hash[i]! << 8) | hash[i + 1]!) & 2047);
    let set = 0;
    for (let bit = 0; bit < 2048; bit++) {
      const on = (bloom[255 - (bit >> 3)]! & (1 << (bit & 7))) !== 0;
      if (on) set++;
      expect(on).toBe(bits.includes(bit));
    }
    expect(set).toBe(new Set(bits).size);
  });

  it("finds every address and topic it holds, by value and by precomputed bits", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 20, maxLength: 20 }),
        fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { maxLength: 4 }),
        (address, topics) => {
          const bloom = logsBloom([log(address, topics)]);
          for (const value of [address, ...topics]) {
            expect(bloomMayContain(bloom, value)).toBe(true);
            expect(bloomHasBits(bloom, bloomBits(value))).toBe(true);
          }
        },
      ),
    );
  });

  it("gives the same answer by bits as by value for values it may not hold", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 256, maxLength: 256 }),
        fc.uint8Array({ minLength: 20, maxLength: 32 }),
        (bloom, value) => {
          expect(bloomHasBits(bloom, bloomBits(value))).toBe(bloomMayContain(bloom, value));
        },
      ),
    );
    expect(bloomMayContain(new Uint8Array(256), new Uint8Array(20))).toBe(false);
  });

  it("ORs blooms together", () => {
    const a = logsBloom([log(new Uint8Array(20).fill(1), [])]);
    const b = logsBloom([log(new Uint8Array(20).fill(2), [])]);
    const both = new Uint8Array(256);
    orBloom(both, a);
    orBloom(both, b);
    expect(bloomMayContain(both, new Uint8Array(20).fill(1))).toBe(true);
    expect(bloomMayContain(both, new Uint8Array(20).fill(2))).toBe(true);
  });
});
