import { NodexError } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { MergeMiningError, MergeMiningErrorCode, malformed } from "../../src/errors.js";

describe("MergeMiningError", () => {
  it("is a NodexError with a package code and context", () => {
    const e = malformed("bad", { offset: 3 });
    expect(e).toBeInstanceOf(NodexError);
    expect(e).toBeInstanceOf(MergeMiningError);
    expect(e.code).toBe(MergeMiningErrorCode.MALFORMED);
    expect(e.meta).toEqual({ offset: 3 });
    expect(e.name).toBe("MergeMiningError");
    for (const code of Object.values(MergeMiningErrorCode)) expect(code).toMatch(/^MERGEMINING_/);
  });
});
