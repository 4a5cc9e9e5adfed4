import fc from "fast-check";
import { expect } from "vitest";
import { CodecError } from "../../src/index.js";

/** The message of the `CodecError` that `fn` throws; fails the test if it throws nothing or something else. */
export function codecMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CodecError);
    return (err as CodecError).message;
  }
  throw new Error("expected a CodecError");
}

/** Strings of hex digits, both cases. */
export const hexString = (opts: { minLength?: number; maxLength?: number }) =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF"), ...opts });
