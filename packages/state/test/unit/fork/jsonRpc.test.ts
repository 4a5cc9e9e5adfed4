import { describe, expect, it } from "vitest";
import { isRateLimitError, parseAnswer } from "../../../src/fork/jsonRpc.js";

describe("isRateLimitError", () => {
  it.each([
    [{ code: -32005, message: "limit exceeded" }, true],
    [{ code: -32000, message: "Too Many Requests" }, true],
    [{ code: 429, message: "daily rate limit reached" }, true],
    [{ code: -32000, message: "header not found" }, false],
    [{ code: -32601, message: "the method x does not exist" }, false],
  ])("%j → %s", (error, limited) => {
    expect(isRateLimitError(error)).toBe(limited);
  });
});

describe("parseAnswer", () => {
  it("keeps a null result and the data of an error", () => {
    expect(parseAnswer({ jsonrpc: "2.0", id: 1, result: null })).toEqual({ id: 1, result: null });
    expect(
      parseAnswer({
        jsonrpc: "2.0",
        id: 2,
        error: { code: 3, message: "execution reverted", data: "0x08c379a0" },
      }),
    ).toEqual({ id: 2, error: { code: 3, message: "execution reverted", data: "0x08c379a0" } });
  });

  it.each([
    [null, "answer is not a JSON-RPC object"],
    [[], "answer is not a JSON-RPC object"],
    [{ id: 1, result: "0x1" }, 'answer has jsonrpc undefined, not "2.0"'],
    [
      { jsonrpc: "2.0", id: 1, result: 1, error: { code: 1, message: "x" } },
      "answer has both result and error",
    ],
    [
      { jsonrpc: "2.0", id: 1, error: { code: 1.5, message: "x" } },
      "answer has an error that is not {code, message}",
    ],
  ])("refuses %j", (value, reason) => {
    expect(parseAnswer(value)).toBe(reason);
  });
});
