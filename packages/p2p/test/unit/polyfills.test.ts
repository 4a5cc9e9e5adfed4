import { describe, expect, it } from "vitest";

interface WithResolvers<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason?: unknown) => void;
}
// ES2023 typings do not know the ES2024 method.
const P = Promise as unknown as { withResolvers?: <T>() => WithResolvers<T> };

describe("the Promise.withResolvers polyfill", () => {
  it("is installed before the tests run, with the standard behaviour", async () => {
    expect(typeof P.withResolvers).toBe("function");
    const { promise, resolve } = P.withResolvers!<number>();
    resolve(7);
    await expect(promise).resolves.toBe(7);
    const failed = P.withResolvers!<number>();
    failed.reject(new Error("no"));
    await expect(failed.promise).rejects.toThrow("no");
  });
});
