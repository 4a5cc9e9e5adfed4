import { describe, expect, it } from "vitest";
import { RateLimiter } from "../../src/rateLimiter.js";

describe("RateLimiter", () => {
  it("allows a burst of its capacity, then its refill rate, per key", () => {
    let now = 0;
    const limiter = new RateLimiter({ capacity: 10, refillPerSecond: 2 }, () => now);
    expect(limiter.take("a", 6)).toBe(true);
    expect(limiter.take("a", 5)).toBe(false); // 4 left: refused whole
    expect(limiter.take("a", 4)).toBe(true);
    expect(limiter.take("a", 1)).toBe(false);
    expect(limiter.take("b", 10)).toBe(true); // buckets are per key
    now = 1_000;
    expect(limiter.take("a", 3)).toBe(false);
    expect(limiter.take("a", 2)).toBe(true);
    now = 1_000_000; // refills stop at the capacity
    expect(limiter.take("a", 11)).toBe(false);
    expect(limiter.take("a", 10)).toBe(true);
  });

  it("says how long until a bucket holds a cost, taking nothing", () => {
    let now = 0;
    const limiter = new RateLimiter({ capacity: 10, refillPerSecond: 2 }, () => now);
    expect(limiter.msUntil("a", 10)).toBe(0);
    expect(limiter.msUntil("a", 11)).toBe(Number.POSITIVE_INFINITY);
    expect(limiter.take("a", 8)).toBe(true);
    expect(limiter.msUntil("a", 2)).toBe(0);
    expect(limiter.msUntil("a", 5)).toBe(1_500);
    now = 1_500;
    expect(limiter.msUntil("a", 5)).toBe(0);
    expect(limiter.take("a", 5)).toBe(true);
    const dry = new RateLimiter({ capacity: 3, refillPerSecond: 0 }, () => 0);
    expect(dry.take("a", 3)).toBe(true);
    expect(dry.msUntil("a", 1)).toBe(Number.POSITIVE_INFINITY);
  });

  it("forgets a key: its bucket starts full again", () => {
    const limiter = new RateLimiter({ capacity: 3, refillPerSecond: 0 }, () => 0);
    expect(limiter.take("a", 3)).toBe(true);
    expect(limiter.take("a", 1)).toBe(false);
    limiter.forget("a");
    expect(limiter.take("a", 3)).toBe(true);
  });

  it("prunes only the buckets that have refilled", () => {
    let now = 0;
    const limiter = new RateLimiter({ capacity: 4, refillPerSecond: 1 }, () => now);
    limiter.take("a", 1);
    limiter.take("b", 4);
    now = 1_000;
    limiter.prune();
    expect(limiter.size).toBe(1); // "a" is full again; "b" has 1 of 4
    expect(limiter.take("b", 2)).toBe(false);
    now = 10_000;
    limiter.prune();
    expect(limiter.size).toBe(0);
  });

  it("refuses a limit without capacity", () => {
    expect(() => new RateLimiter({ capacity: 0, refillPerSecond: 1 })).toThrow(RangeError);
  });
});
