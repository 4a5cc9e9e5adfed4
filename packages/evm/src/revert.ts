import { bytesToHex } from "@nodex/types";

const ERROR_SELECTOR = "0x08c379a0"; // Error(string)
const PANIC_SELECTOR = "0x4e487b71"; // Panic(uint256)

const PANIC_REASONS: Readonly<Record<number, string>> = {
  0: "generic panic",
  1: "assert(false)",
  17: "arithmetic underflow or overflow",
  18: "division or modulo by zero",
  33: "invalid enum value",
  34: "invalid storage byte array encoding",
  49: "pop from an empty array",
  50: "array index out of bounds",
  65: "out of memory",
  81: "call to an uninitialized function",
};

/**
 * What revert data says, for people: the string of `Error(string)`, the code and meaning of
 * `Panic(uint256)`, or `undefined` (custom errors and raw data are left to the caller's ABI).
 */
export function decodeRevertReason(data: Uint8Array): string | undefined {
  if (data.length < 4) return undefined;
  const selector = bytesToHex(data.subarray(0, 4));
  if (selector === ERROR_SELECTOR && data.length >= 68) {
    const offset = readWord(data, 4);
    const start = 4 + Number(offset);
    if (offset > BigInt(data.length) || start + 32 > data.length) return undefined;
    const length = Number(readWord(data, start));
    if (start + 32 + length > data.length) return undefined;
    return new TextDecoder().decode(data.subarray(start + 32, start + 32 + length));
  }
  if (selector === PANIC_SELECTOR && data.length >= 36) {
    const code = readWord(data, 4);
    const meaning = code < 0x100n ? PANIC_REASONS[Number(code)] : undefined;
    return `panic: ${meaning ?? "unknown panic code"} (0x${code.toString(16)})`;
  }
  return undefined;
}

function readWord(data: Uint8Array, at: number): bigint {
  let n = 0n;
  for (let i = at; i < at + 32; i++) n = (n << 8n) | BigInt(data[i] ?? 0);
  return n;
}
