import { describe, expect, it } from "vitest";
import { CodecError, CodecErrorCode, NodexError } from "../../src/index.js";

describe("NodexError", () => {
  it("carries a code, a message, context and a cause", () => {
    const cause = new Error("disk");
    const err = new NodexError(
      "CHAIN_PARENT_UNKNOWN",
      "parent block unknown",
      { number: 5 },
      { cause },
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("NodexError");
    expect(err.code).toBe("CHAIN_PARENT_UNKNOWN");
    expect(err.message).toBe("parent block unknown");
    expect(err.meta).toEqual({ number: 5 });
    expect(err.cause).toBe(cause);
  });

  it("defaults to empty context and no cause", () => {
    const err = new NodexError("X", "x");
    expect(err.meta).toEqual({});
    expect("cause" in err).toBe(false);
  });

  it("keeps its own copy of the context", () => {
    const meta: Record<string, unknown> = { number: 5 };
    const err = new NodexError("X", "x", meta);
    meta.number = 6;
    expect(err.meta).toEqual({ number: 5 });
    expect(Object.isFrozen(err.meta)).toBe(true);
  });
});

describe("CodecError", () => {
  it("names the argument and the reason", () => {
    const err = new CodecError(2, "hex string of odd length");
    expect(err).toBeInstanceOf(NodexError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("CodecError");
    expect(err.code).toBe(CodecErrorCode.INVALID_ARGUMENT);
    expect(err.code).toBe("CODEC_INVALID_ARGUMENT");
    expect(err.argument).toBe(2);
    expect(err.reason).toBe("hex string of odd length");
    expect(err.message).toBe("invalid argument 2: hex string of odd length");
    expect(err.meta).toEqual({ argument: 2, reason: "hex string of odd length" });
  });
});
