import { describe, expect, it } from "vitest";

describe("the Promise.withResolvers polyfill", () => {
  it("is installed before the tests run, with the standard behaviour", async () => {
    expect(typeof Promise.withResolvers).toBe("function");
    const { promise, resolve } = Promise.withResolvers<number>();
    resolve(7);
    await expect(promise).resolves.toBe(7);
    const failed = Promise.withResolvers<number>();
    failed.reject(new Error("no"));
    await expect(failed.promise).rejects.toThrow("no");
  });
});
