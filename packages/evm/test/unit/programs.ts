import { pushCall } from "./bytecode.js";

/** A seeded generator, so that a failure names a program that can be run again. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s;
  };
}

// Opcodes that touch no other account, with how many words each takes from the stack and
// puts back: arithmetic, comparison, bits, hashing, the environment, memory, storage, logs.
const OPS: readonly [op: number, pops: number, pushes: number][] = [
  [0x01, 2, 1],
  [0x02, 2, 1],
  [0x03, 2, 1],
  [0x04, 2, 1],
  [0x05, 2, 1],
  [0x06, 2, 1],
  [0x07, 2, 1],
  [0x08, 3, 1],
  [0x09, 3, 1],
  [0x0a, 2, 1],
  [0x0b, 2, 1],
  [0x10, 2, 1],
  [0x11, 2, 1],
  [0x12, 2, 1],
  [0x13, 2, 1],
  [0x14, 2, 1],
  [0x15, 1, 1],
  [0x16, 2, 1],
  [0x17, 2, 1],
  [0x18, 2, 1],
  [0x19, 1, 1],
  [0x1a, 2, 1],
  [0x1b, 2, 1],
  [0x1c, 2, 1],
  [0x1d, 2, 1],
  [0x20, 2, 1],
  [0x30, 0, 1],
  [0x31, 1, 1],
  [0x32, 0, 1],
  [0x33, 0, 1],
  [0x34, 0, 1],
  [0x35, 1, 1],
  [0x36, 0, 1],
  [0x38, 0, 1],
  [0x3a, 0, 1],
  [0x43, 0, 1],
  [0x47, 0, 1],
  [0x50, 1, 0],
  [0x51, 1, 1],
  [0x52, 2, 0],
  [0x53, 2, 0],
  [0x54, 1, 1],
  [0x55, 2, 0],
  [0x58, 0, 1],
  [0x59, 0, 1],
  [0x5a, 0, 1],
  [0x5b, 0, 0],
  [0x5f, 0, 1],
  [0x80, 1, 2],
  [0x81, 2, 3],
  [0x82, 3, 4],
  [0x90, 2, 2],
  [0x91, 3, 3],
  [0xa0, 2, 0],
  [0xa1, 3, 0],
  [0xa2, 4, 0],
];
/** Pops of the opcodes whose first argument is a memory offset or size (mostly small). */
const MEMORY_OPS = new Set([0x20, 0x51, 0x52, 0x53, 0xa0, 0xa1, 0xa2]);

/**
 * A random program that mostly runs to its end: each opcode only when the stack holds its
 * arguments, memory offsets pushed small, and now and then something that fails on purpose (a
 * stray jump, an invalid opcode, a revert, a stack underflow).
 */
export function program(next: () => number): Uint8Array {
  const out: number[] = [];
  let depth = 0;
  const length = 20 + (next() % 200);
  while (out.length < length) {
    const r = next() % 1000;
    if (r < 3) {
      out.push(0xfe); // INVALID
    } else if (r < 6) {
      out.push(0x60, next() % 256, 0x56); // JUMP, most likely to no JUMPDEST
    } else if (r < 9) {
      out.push(0x60, 0, 0x60, 0, 0xfd); // REVERT
      depth += 0;
    } else if (r < 12) {
      out.push(0x50); // POP, maybe of nothing
      depth = Math.max(0, depth - 1);
    } else if (r < 30) {
      // CALLDATACOPY, CODECOPY or MCOPY: size, source, then destination (now and then far out).
      out.push(0x60, next() % 96, 0x60, next() % 64);
      if (next() % 4 === 0) out.push(0x61, next() % 160, next() & 0xff);
      else out.push(0x60, next() % 128);
      out.push([0x37, 0x39, 0x5e][next() % 3]!);
    } else if (r < 400 || depth < 4) {
      if (next() % 8 === 0) {
        const n = 1 + (next() % 32);
        out.push(0x5f + n);
        for (let i = 0; i < n; i++) out.push(next() & 0xff);
      } else {
        out.push(0x60, next() % 128);
      }
      depth++;
    } else {
      const [op, pops, pushes] = OPS[next() % OPS.length]!;
      if (depth < pops) continue;
      // Memory opcodes get a small offset and size on top of the stack.
      if (MEMORY_OPS.has(op)) {
        out.push(0x60, next() % 64);
        // Now and then an offset far out, so that memory grows several times over.
        if (next() % 6 === 0) out.push(0x61, next() % 160, next() & 0xff);
        else out.push(0x60, next() % 128);
        if (op === 0x20 || op >= 0xa0) out.push(0x90); // SWAP1: size, then offset
        depth += 2;
      }
      out.push(op);
      depth += pushes - pops;
    }
    if (depth > 1000) break;
  }
  // SSTORE(0xff, KECCAK256 of all memory), then RETURN the first word of memory.
  out.push(0x59, 0x60, 0, 0x20, 0x60, 0xff, 0x55);
  out.push(0x60, 32, 0x60, 0, 0xf3);
  return Uint8Array.from(out);
}

/**
 * A contract that makes 1–3 calls of random kinds to `targets` (value: none, a little, or more
 * than any contract holds), keeping what they answered in storage and in the return data, then
 * writes, logs and reads balances and code hashes. Contract `index` % 4 = 1 reverts at its end,
 * % 8 = 2 halts, the others return.
 */
export function callingProgram(
  next: () => number,
  index: number,
  targets: readonly Uint8Array[],
): Uint8Array {
  const out: number[] = [];
  // Memory: calldata's first word; storage slot 5 read, so that it counts as warm or cold.
  out.push(0x60, 0, 0x35, 0x60, 0, 0x52, 0x60, 5, 0x54, 0x50);
  // Transient storage: TSTORE(1, CALLER), read back by the callees that TLOAD it.
  out.push(0x33, 0x60, 1, 0x5d, 0x60, 1, 0x5c, 0x60, 0x40, 0x52);
  const calls = 1 + (next() % 3);
  for (let c = 0; c < calls; c++) {
    const kind = ([0xf1, 0xf2, 0xf4, 0xfa] as const)[next() % 4]!;
    const target = targets[next() % targets.length]!;
    const gas = next() % 4 === 0 ? undefined : BigInt(next() % 60_000);
    const retOffset = BigInt(next() % 64);
    const argsSize = BigInt(next() % 96);
    // value: none, a little, or more than any contract holds (the call fails, gas comes back)
    let value = 0n;
    if (kind === 0xf1 || kind === 0xf2) {
      const pick = next() % 10;
      value = pick < 5 ? 0n : pick < 9 ? BigInt(1 + (next() % 500)) : 10n ** 30n;
    }
    pushCall(out, { kind, target, gas, value, retOffset, argsSize }, c);
    // RETURNDATACOPY of the whole return data to memory 64
    out.push(0x3d, 0x5f, 0x60, 64, 0x3e);
  }
  // SSTORE(32, CALLVALUE), SSTORE(33, CALLER), LOG1 of memory with ADDRESS as topic
  out.push(0x34, 0x60, 32, 0x55, 0x33, 0x60, 33, 0x55, 0x30, 0x60, 32, 0x60, 0, 0xa1);
  // EXTCODEHASH and BALANCE of CALLER and of ORIGIN, SELFBALANCE, into memory
  out.push(0x33, 0x3f, 0x60, 0x80, 0x52, 0x32, 0x3f, 0x60, 0xa0, 0x52, 0x32, 0x31, 0x60, 0xc0);
  out.push(0x52, 0x47, 0x60, 0xe0, 0x52);
  // One contract in four reverts, one in eight halts, the others return.
  if (index % 4 === 1) out.push(0x60, 0x40, 0x60, 0, 0xfd);
  else if (index % 8 === 2) out.push(0xfe);
  else out.push(0x61, 0x01, 0x00, 0x60, 0, 0xf3);
  return Uint8Array.from(out);
}
