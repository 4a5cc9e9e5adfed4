import { describe, expect, it } from "vitest";
import { Bucket, bucketKey } from "../../../src/index.js";

describe("buckets", () => {
  it("have distinct one-byte numbers", () => {
    const numbers = Object.values(Bucket);
    expect(new Set(numbers).size).toBe(numbers.length);
    for (const n of numbers) expect(n >= 0x01 && n <= 0xff).toBe(true);
  });

  it("keep the numbers already on disk", () => {
    expect(Bucket).toEqual({
      TRIE: 0x01,
      HEADER: 0x02,
      BODY: 0x03,
      RECEIPTS: 0x04,
      CANONICAL: 0x05,
      TX_LOOKUP: 0x06,
      TOTAL_DIFFICULTY: 0x07,
      META: 0x08,
      SENDERS: 0x09,
      LOG_INDEX: 0x0a,
      FORK_HISTORY: 0x0b,
    });
  });

  it("prefix a key with its bucket byte", () => {
    expect([...bucketKey(Bucket.SENDERS, Uint8Array.of(0xab, 0xcd))]).toEqual([0x09, 0xab, 0xcd]);
    expect(bucketKey(Bucket.META, new Uint8Array()).length).toBe(1);
  });
});
