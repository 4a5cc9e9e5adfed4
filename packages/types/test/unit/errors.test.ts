import { describe, expect, it } from "vitest";
import { CodecError, CodecErrorCode, NodexError, nullLogger } from "../../src/index.js";

describe("errors", () => {
  it("NodexError carries a code, a message, context and a cause", () => {
    const cause = new Error("disk");
    const err = new NodexError(
      "CHAIN_PARENT_UNKNOWN",
      "parent block unknown",
      { number: 5 },
      { cause },
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe("CHAIN_PARENT_UNKNOWN");
    expect(err.message).toBe("parent block unknown");
    expect(err.meta).toEqual({ number: 5 });
    expect(err.cause).toBe(cause);
  });

  it("CodecError names the argument and the reason", () => {
    const err = new CodecError(2, "hex string of odd length");
    expect(err).toBeInstanceOf(NodexError);
    expect(err.code).toBe(CodecErrorCode.INVALID_ARGUMENT);
    expect(err.message).toBe("invalid argument 2: hex string of odd length");
    expect(err.meta).toEqual({ argument: 2, reason: "hex string of odd length" });
  });

  it("nullLogger discards everything", () => {
    expect(nullLogger.child({ a: 1 })).toBe(nullLogger);
    expect(nullLogger.isLevelEnabled("error")).toBe(false);
    expect(nullLogger.info("x")).toBeUndefined();
  });
});
