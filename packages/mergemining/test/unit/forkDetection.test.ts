import { FORK_DETECTION_HEIGHT, withForkDetectionData } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bitcoinHash } from "../../src/bitcoinHeader.js";
import { compressCoinbase, RSK_TAG } from "../../src/coinbase.js";
import { MergeMiningErrorCode } from "../../src/errors.js";
import {
  cpvHeights,
  forkDetectionData,
  forkDetectionDataFromCoinbase,
} from "../../src/forkDetection.js";
import { verifyMergedMiningProof } from "../../src/proof.js";
import { buildSyntheticProof } from "../../src/synthetic.js";
import { mainnetCheckpoints, toHex } from "./vectors.js";

const concat = (...p: Uint8Array[]) => Uint8Array.from(p.flatMap((x) => [...x]));

describe("cpvHeights", () => {
  it("64·floor((height−1)/64) − 64·i, i = 0..6", () => {
    expect(cpvHeights(FORK_DETECTION_HEIGHT)).toEqual([448n, 384n, 320n, 256n, 192n, 128n, 64n]);
    expect(cpvHeights(1000n)).toEqual([960n, 896n, 832n, 768n, 704n, 640n, 576n]);
    expect(cpvHeights(961n)).toEqual([960n, 896n, 832n, 768n, 704n, 640n, 576n]);
    expect(cpvHeights(960n)[0]).toBe(896n);
  });
  it("exists from height 449 only", () => {
    expect(() => cpvHeights(448n)).toThrow(/from height 449/);
  });
});

describe("forkDetectionData (real Bitcoin mainnet headers from the rskj checkpoints)", () => {
  const headers = mainnetCheckpoints()
    .slice(0, 7)
    .map((r) => r.header);

  it("7 CPV bytes (first raw byte of each header hash), the uncle sum, the height", () => {
    const uncleCounts = Array.from({ length: 32 }, (_, i) => i % 3);
    const fdd = forkDetectionData({ cpvBitcoinHeaders: headers, uncleCounts, height: 0x01020304n });
    expect(fdd).toHaveLength(12);
    expect([...fdd.subarray(0, 7)]).toEqual(headers.map((h) => bitcoinHash(h)[0]));
    expect(fdd[7]).toBe(uncleCounts.reduce((a, b) => a + b, 0));
    expect(toHex(fdd.subarray(8))).toBe("01020304");
  });

  it("caps the uncle sum at 255", () => {
    const fdd = forkDetectionData({
      cpvBitcoinHeaders: headers,
      uncleCounts: new Array(32).fill(10),
      height: 5000n,
    });
    expect(fdd[7]).toBe(255);
  });

  it("rejects the wrong number of headers or uncle counts, short headers, bad heights", () => {
    const ok = { cpvBitcoinHeaders: headers, uncleCounts: new Array(32).fill(0), height: 5000n };
    expect(() => forkDetectionData({ ...ok, cpvBitcoinHeaders: headers.slice(1) })).toThrow(
      /want 7/,
    );
    expect(() => forkDetectionData({ ...ok, uncleCounts: [1] })).toThrow(/32 most recent/);
    expect(() =>
      forkDetectionData({ ...ok, cpvBitcoinHeaders: [...headers.slice(1), new Uint8Array(79)] }),
    ).toThrow(/header 6 is 79 bytes/);
    expect(() => forkDetectionData({ ...ok, uncleCounts: [-1, ...new Array(31).fill(0)] })).toThrow(
      /uncle count/,
    );
    expect(() => forkDetectionData({ ...ok, height: 448n })).toThrow(/449/);
    expect(() => forkDetectionData({ ...ok, height: 1n << 32n })).toThrow(/449/);
  });
});

describe("forkDetectionDataFromCoinbase", () => {
  it("reads back the 12 bytes a miner wrote after RSKBLOCK: + base[0..20)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 12, maxLength: 12 }),
        fc.uint8Array({ maxLength: 100 }),
        (base, fdd, before) => {
          const hfm = withForkDetectionData(base, fdd);
          const full = concat(before, RSK_TAG, hfm, new Uint8Array(4));
          fc.pre(Buffer.from(full).lastIndexOf(Buffer.from(RSK_TAG)) === before.length);
          expect(toHex(forkDetectionDataFromCoinbase(full, base))).toBe(toHex(fdd));
          expect(toHex(forkDetectionDataFromCoinbase(compressCoinbase(full), base))).toBe(
            toHex(fdd),
          );
        },
      ),
    );
  });

  it("with a synthetic proof: the coinbase carries hashForMergedMining with its fork-detection data", () => {
    const base = new Uint8Array(32).fill(0x42);
    const fdd = Uint8Array.from({ length: 12 }, (_, i) => i);
    const hashForMergedMining = withForkDetectionData(base, fdd);
    const p = buildSyntheticProof({ hashForMergedMining, difficulty: 10n, time: 1 });
    expect(toHex(forkDetectionDataFromCoinbase(p.coinbase, base))).toBe(toHex(fdd));
    expect(verifyMergedMiningProof({ hashForMergedMining, difficulty: 10n, ...p }).ok).toBe(true);
  });

  it("fails without the tag and base, or with fewer than 12 bytes after it", () => {
    const base = new Uint8Array(32).fill(1);
    expect(() => forkDetectionDataFromCoinbase(new Uint8Array(100), base)).toThrow(
      expect.objectContaining({ code: MergeMiningErrorCode.TAG_MISSING }),
    );
    const short = concat(RSK_TAG, base.subarray(0, 20), new Uint8Array(11));
    expect(() => forkDetectionDataFromCoinbase(short, base)).toThrow(/12 bytes/);
    expect(() => forkDetectionDataFromCoinbase(short, new Uint8Array(20))).toThrow(/32 bytes/);
  });
});
