import { describe, expect, it } from "vitest";
import { releaseAnswerBuffer, takeAnswerBuffer } from "../../src/answerBuffers.js";

describe("answer buffers", () => {
  it("hands a released buffer out again, and never one that is out", () => {
    const a = takeAnswerBuffer(100_000);
    const b = takeAnswerBuffer(100_000);
    expect(a.length).toBeGreaterThanOrEqual(100_000);
    expect(b.buffer).not.toBe(a.buffer);
    releaseAnswerBuffer(a.subarray(64, 1000));
    // Released twice: still handed out once.
    releaseAnswerBuffer(a);
    const c = takeAnswerBuffer(50_000);
    expect(c.buffer).toBe(a.buffer);
    const d = takeAnswerBuffer(50_000);
    expect(d.buffer).not.toBe(a.buffer);
    expect(d.buffer).not.toBe(b.buffer);
  });

  it("leaves alone buffers it did not make, and hands out one large enough", () => {
    const shared = Buffer.allocUnsafe(10);
    const own = Buffer.allocUnsafeSlow(200_000);
    releaseAnswerBuffer(shared);
    releaseAnswerBuffer(own);
    const small = takeAnswerBuffer(1_000);
    releaseAnswerBuffer(small);
    const big = takeAnswerBuffer(300_000);
    expect(big.buffer).not.toBe(own.buffer);
    expect(big.buffer).not.toBe(small.buffer);
    expect(big.length).toBeGreaterThanOrEqual(300_000);
  });
});
