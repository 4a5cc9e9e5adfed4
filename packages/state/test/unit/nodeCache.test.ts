import { describe, expect, it } from "vitest";
import { NodeCache } from "../../src/index.js";

describe("NodeCache", () => {
  it("keeps the most recently used entries within its bound", () => {
    const cache = new NodeCache(2);
    cache.set("a", new Uint8Array([1]));
    cache.set("b", new Uint8Array([2]));
    expect(cache.get("a")).toEqual(new Uint8Array([1])); // a is now the most recent
    cache.set("c", new Uint8Array([3])); // evicts b
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toEqual(new Uint8Array([1]));
    expect(cache.get("c")).toEqual(new Uint8Array([3]));
    expect(cache.size).toBe(2);
  });
});
