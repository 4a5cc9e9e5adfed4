import { CodecError } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { decodeParams, p } from "../../src/index.js";

const H = `0x${"22".repeat(32)}`;

/** The message of the error `fn` throws. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CodecError);
    return (err as Error).message;
  }
  throw new Error("did not throw");
}

describe("decodeParams", () => {
  const specs = [p.address, p.optional(p.blockSelector, { kind: "tag", tag: "latest" } as const)];

  it("says which required argument is missing, and how many are allowed", () => {
    expect(decodeParams(specs, [])).toEqual({ error: "missing value for required argument 0" });
    expect(decodeParams(specs, [`0x${"11".repeat(20)}`, "latest", true])).toEqual({
      error: "too many arguments, want at most 2",
    });
  });

  it("takes null for an optional argument as absent, and refuses it for a required one", () => {
    expect(decodeParams(specs, [`0x${"11".repeat(20)}`, null]).value?.[1]).toEqual({
      kind: "tag",
      tag: "latest",
    });
    expect(thrown(() => decodeParams(specs, [null]))).toBe(
      "invalid argument 0: expected a hex string, got null",
    );
  });
});

describe("storage keys (eth_getProof)", () => {
  it.each([
    ["0x0", "invalid argument 1: expected an array of storage keys, got string"],
    [null, "invalid argument 1: expected an array of storage keys, got null"],
    [[1], "invalid argument 1: storageKeys[0]: expected a hex string, got number"],
    [
      [H, `0x${"00".repeat(33)}`],
      "invalid argument 1: storageKeys[1]: hex string too long: 33 bytes, want at most 32",
    ],
    [[H, H, "0xzz"], "invalid argument 1: storageKeys[2]: invalid hex string"],
  ])("refuses %j naming the key and why", (keys, message) => {
    expect(thrown(() => p.storageKeys.parse(keys, 1))).toBe(message);
  });

  it("decodes 32-byte keys", () => {
    expect(p.storageKeys.parse([H], 1)).toEqual({
      keys: [new Uint8Array(32).fill(0x22)],
      asked: [H],
    });
  });

  it("left-pads shorter keys of any hex length, as geth does", () => {
    const padded = (last: number[]) => {
      const key = new Uint8Array(32);
      key.set(last, 32 - last.length);
      return key;
    };
    const asked = ["0x0", "0x1", "0x00", "0xabc", "0x"];
    expect(p.storageKeys.parse(asked, 1)).toEqual({
      keys: [padded([0]), padded([1]), padded([0]), padded([0x0a, 0xbc]), padded([])],
      asked,
    });
  });
});
