import { hexToBytes } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { decodeRevertReason } from "../../src/index.js";

const word = (n: bigint) => n.toString(16).padStart(64, "0");

describe("decodeRevertReason", () => {
  it("reads Error(string)", () => {
    const text = Buffer.from("ERC20: transfer amount exceeds balance").toString("hex");
    const data = hexToBytes(
      `0x08c379a0${word(32n)}${word(BigInt(text.length / 2))}${text.padEnd(128, "0")}`,
    );
    expect(decodeRevertReason(data)).toBe("ERC20: transfer amount exceeds balance");
  });

  it.each([
    [0x01n, "panic: assert(false) (0x1)"],
    [0x11n, "panic: arithmetic underflow or overflow (0x11)"],
    [0x12n, "panic: division or modulo by zero (0x12)"],
    [0x32n, "panic: array index out of bounds (0x32)"],
    [0x99n, "panic: unknown panic code (0x99)"],
  ])("reads Panic(%i)", (code, text) => {
    expect(decodeRevertReason(hexToBytes(`0x4e487b71${word(code)}`))).toBe(text);
  });

  it("leaves custom errors, short and malformed data undecoded", () => {
    expect(decodeRevertReason(hexToBytes("0x12345678"))).toBeUndefined();
    expect(decodeRevertReason(hexToBytes("0x08c3"))).toBeUndefined();
    expect(decodeRevertReason(hexToBytes(`0x08c379a0${word(32n)}${word(1000n)}`))).toBeUndefined();
    expect(decodeRevertReason(new Uint8Array())).toBeUndefined();
  });
});
