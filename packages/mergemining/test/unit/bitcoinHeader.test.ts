import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BITCOIN_HEADER_SIZE,
  bitcoinHash,
  encodeBitcoinHeader,
  hashToDisplayHex,
  parseBitcoinHeader,
} from "../../src/bitcoinHeader.js";
import { MergeMiningErrorCode } from "../../src/errors.js";
import { compactToTarget, hashToBigint } from "../../src/target.js";
import { bitcoinjsBlocks, hex, mainnetCheckpoints, toHex } from "./vectors.js";

describe("Bitcoin headers: 430 real mainnet headers (rskj bitcoinj checkpoints, every 2016 blocks)", () => {
  const rows = mainnetCheckpoints();

  it("has the 430 checkpoints, every 2016 blocks", () => {
    expect(rows).toHaveLength(430);
    for (const r of rows) expect(r.height % 2016).toBe(0);
  });

  it("parses and re-serializes each header byte for byte", () => {
    for (const { header } of rows) {
      expect(toHex(encodeBitcoinHeader(parseBitcoinHeader(header)))).toBe(toHex(header));
    }
  });

  it("each header's double-SHA256 meets the target of its own nBits", () => {
    for (const { header, height } of rows) {
      const h = parseBitcoinHeader(header);
      const { target, negative, overflow } = compactToTarget(h.bits);
      expect(negative || overflow, `height ${height}`).toBe(false);
      expect(hashToBigint(bitcoinHash(header)) <= target, `height ${height}`).toBe(true);
    }
  });

  it("prevHash is in raw order: shown reversed, it starts with zeros like a block id", () => {
    for (const { header } of rows) {
      expect(hashToDisplayHex(parseBitcoinHeader(header).prevHash)).toMatch(/^00000000/);
    }
  });
});

describe("Bitcoin headers: bitcoinjs-lib block fixtures", () => {
  const { valid, invalid } = bitcoinjsBlocks();

  it.each(valid.map((b) => [b.description, b] as const))("%s: fields, hash and id", (_, b) => {
    const bytes = hex(b.hex).subarray(0, BITCOIN_HEADER_SIZE);
    const h = parseBitcoinHeader(bytes);
    expect(h.version).toBe(b.version);
    expect(toHex(h.prevHash)).toBe(b.prevHash);
    expect(toHex(h.merkleRoot)).toBe(b.merkleRoot);
    expect(h.time).toBe(b.timestamp);
    expect(h.bits).toBe(b.bits);
    expect(h.nonce).toBe(b.nonce);
    expect(toHex(bitcoinHash(bytes))).toBe(b.hash);
    expect(toHex(bitcoinHash(h))).toBe(b.hash);
    expect(hashToDisplayHex(bitcoinHash(bytes))).toBe(b.id);
  });

  it("the header whose nonce was changed fails proof of work; the original passes", () => {
    const changed = valid.find((b) => b.description === "Headers only - nonce changed")!;
    const original = valid.find((b) => b.height === 370090 && b.nonce !== 0)!;
    const target = compactToTarget(changed.bits).target;
    expect(hashToBigint(bitcoinHash(hex(changed.hex))) > target).toBe(true);
    expect(hashToBigint(bitcoinHash(hex(original.hex))) <= target).toBe(true);
  });

  it("rejects a header shorter than 80 bytes", () => {
    for (const { hex: h } of invalid) {
      expect(() => parseBitcoinHeader(hex(h))).toThrow(
        expect.objectContaining({ code: MergeMiningErrorCode.MALFORMED }),
      );
    }
    expect(() => parseBitcoinHeader(new Uint8Array(81))).toThrow(/80 bytes, got 81/);
    expect(() => bitcoinHash(new Uint8Array(79))).toThrow(/80 bytes, got 79/);
  });
});

describe("Bitcoin headers: properties", () => {
  it("parse ∘ encode is the identity on any 80 bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 80, maxLength: 80 }), (b) => {
        expect(toHex(encodeBitcoinHeader(parseBitcoinHeader(b)))).toBe(toHex(b));
      }),
    );
  });

  it("the display hex is the reversed raw hash", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (b) => {
        expect(hashToDisplayHex(b)).toBe(toHex(Uint8Array.from(b).reverse()));
      }),
    );
  });

  it("rejects prevHash or merkleRoot of the wrong size", () => {
    const h = parseBitcoinHeader(new Uint8Array(80));
    expect(() => encodeBitcoinHeader({ ...h, prevHash: new Uint8Array(31) })).toThrow(/32 bytes/);
  });
});
