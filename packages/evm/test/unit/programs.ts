import { pushCall } from "./bytecode.js";

/** A seeded generator, so that a failure names a program that can be run again. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s;
  };
}

// Opcodes that touch no other account's code or storage, with how many words each takes from
// the stack and puts back: arithmetic, comparison, bits, hashing, the environment and the
// block, balances and code of other accounts, memory, storage, transient storage, logs, and
// every DUP and SWAP. The copies of code and data, jumps, and the opcodes that call or create
// are written by `program` itself.
const OPS: readonly [op: number, pops: number, pushes: number][] = [
  // STOP's family: arithmetic, comparison and bits
  ...[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0a, 0x0b].map((op) => [op, 2, 1] as const),
  [0x08, 3, 1], // ADDMOD
  [0x09, 3, 1], // MULMOD
  ...[0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x18, 0x1a, 0x1b, 0x1c, 0x1d].map(
    (op) => [op, 2, 1] as const,
  ),
  [0x15, 1, 1], // ISZERO
  [0x19, 1, 1], // NOT
  [0x20, 2, 1], // KECCAK256
  // the environment
  ...[0x30, 0x32, 0x33, 0x34, 0x36, 0x38, 0x3a, 0x3d].map((op) => [op, 0, 1] as const),
  [0x31, 1, 1], // BALANCE
  [0x35, 1, 1], // CALLDATALOAD
  [0x3b, 1, 1], // EXTCODESIZE
  [0x3f, 1, 1], // EXTCODEHASH
  // the block
  [0x40, 1, 1], // BLOCKHASH
  ...[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x4a].map((op) => [op, 0, 1] as const),
  [0x49, 1, 1], // BLOBHASH
  // stack, memory, storage
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
  [0x5c, 1, 1], // TLOAD
  [0x5d, 2, 0], // TSTORE
  [0x5f, 0, 1],
  // DUP1–DUP16, SWAP1–SWAP16
  ...Array.from({ length: 16 }, (_, n) => [0x80 + n, n + 1, n + 2] as const),
  ...Array.from({ length: 16 }, (_, n) => [0x90 + n, n + 2, n + 2] as const),
  // LOG0–LOG4
  ...Array.from({ length: 5 }, (_, n) => [0xa0 + n, n + 2, 0] as const),
];
/** Pops of the opcodes whose first argument is a memory offset or size (mostly small). */
const MEMORY_OPS = new Set([0x20, 0x51, 0x52, 0x53, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4]);

/** The opcodes `program` writes, so that a test can check that none is left out. */
export const PROGRAM_OPCODES: ReadonlySet<number> = new Set([
  ...OPS.map(([op]) => op),
  0x00, // STOP
  0x37, // CALLDATACOPY
  0x39, // CODECOPY
  0x3c, // EXTCODECOPY
  0x3e, // RETURNDATACOPY
  0x56, // JUMP
  0x57, // JUMPI
  0x5e, // MCOPY
  0xf3, // RETURN
  0xfd, // REVERT
  0xfe, // INVALID
  ...Array.from({ length: 32 }, (_, n) => 0x60 + n), // PUSH1–PUSH32
]);

/**
 * A random program that mostly runs to its end: each opcode only when the stack holds its
 * arguments, memory offsets pushed small, and now and then something that ends it early (a
 * STOP) or fails on purpose (a stray jump, an invalid opcode, a revert, a stack underflow).
 */
export function program(next: () => number): Uint8Array {
  const out: number[] = [];
  let depth = 0;
  const length = 20 + (next() % 200);
  while (out.length < length) {
    const r = next() % 1000;
    if (r < 1) {
      out.push(0x00); // STOP
    } else if (r < 3) {
      out.push(0xfe); // INVALID
    } else if (r < 6) {
      out.push(0x60, next() % 256, 0x56); // JUMP, most likely to no JUMPDEST
    } else if (r < 9) {
      out.push(0x60, 0, 0x60, 0, 0xfd); // REVERT
      depth += 0;
    } else if (r < 12) {
      out.push(0x50); // POP, maybe of nothing
      depth = Math.max(0, depth - 1);
    } else if (r < 14) {
      // JUMPI on a condition, most likely to no JUMPDEST when it is taken
      out.push(0x60, next() % 2, 0x60, next() % 256, 0x57);
    } else if (r < 30) {
      // CALLDATACOPY, CODECOPY, MCOPY, RETURNDATACOPY (out of bounds unless the size is 0 and
      // the offset within the last call's output) or EXTCODECOPY (of this contract, the caller,
      // a precompile or nothing): size, source, then destination (now and then far out).
      const op = [0x37, 0x39, 0x5e, 0x3e, 0x3c][next() % 5]!;
      out.push(0x60, op === 0x3e ? next() % 2 : next() % 96, 0x60, next() % 64);
      if (next() % 4 === 0) out.push(0x61, next() % 160, next() & 0xff);
      else out.push(0x60, next() % 128);
      if (op === 0x3c)
        out.push(
          ...([[0x30], [0x33], [0x60, 1 + (next() % 9)], [0x60, 0xee]] as const)[next() % 4]!,
        );
      out.push(op);
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
 * writes, logs and reads balances and code hashes, and may create a contract. Contract `index`
 * % 4 = 1 reverts at its end, % 8 = 2 halts, % 8 = 6 destroys itself, the others return.
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
  // Now and then a creation: CREATE or CREATE2 (salt: the call's value) of init code that
  // deploys the one byte 0x2a, with no value, a little, or more than the contract holds; the
  // new address goes to slot 34.
  // (rarely: the interpreter leaves creations to the library, whose runs are compared too)
  const pick = (next() >>> 16) % 8; // the high bits: the low ones repeat with a short period
  const create = pick === 0 ? 1 : pick === 1 ? 2 : 0;
  if (create > 0) {
    // PUSH10 of the init code (PUSH1 0x2a, PUSH1 0, MSTORE8, PUSH1 1, PUSH1 0, RETURN), MSTORE
    // at 0x100: it lands at 0x116–0x11f.
    out.push(0x69, 0x60, 0x2a, 0x60, 0x00, 0x53, 0x60, 0x01, 0x60, 0x00, 0xf3, 0x61, 0x01, 0x00);
    out.push(0x52);
    if (create === 2) out.push(0x34); // salt
    out.push(0x60, 10, 0x61, 0x01, 0x16);
    const value = next() % 4;
    out.push(
      ...(value < 2 ? [0x5f] : value < 3 ? [0x60, 7] : [0x6a, 0xff, ...new Array(10).fill(0)]),
    );
    out.push(create === 1 ? 0xf0 : 0xf5, 0x60, 34, 0x55);
  }
  // One contract in four reverts, one in eight halts, one in eight destroys itself (EIP-6780:
  // its balance goes to the caller), the others return.
  if (index % 4 === 1) out.push(0x60, 0x40, 0x60, 0, 0xfd);
  else if (index % 8 === 2) out.push(0xfe);
  else if (index % 8 === 6) out.push(0x33, 0xff);
  else out.push(0x61, 0x01, 0x00, 0x60, 0, 0xf3);
  return Uint8Array.from(out);
}

/**
 * A contract that runs a precompile on its calldata: STATICCALL(gas, `precompile`, calldata),
 * then returns the call's success as a word and its output. `gas`: all that is left, or that
 * much (so that a precompile can run out of it).
 */
export function precompileCaller(precompile: number, gas: number | undefined): Uint8Array {
  const out: number[] = [0x36, 0x5f, 0x5f, 0x37]; // CALLDATACOPY(0, 0, CALLDATASIZE)
  out.push(0x5f, 0x5f, 0x36, 0x5f, 0x60, precompile); // retSize, retOffset, argsSize, argsOffset, address
  if (gas === undefined) out.push(0x5a);
  else out.push(0x62, (gas >> 16) & 0xff, (gas >> 8) & 0xff, gas & 0xff);
  out.push(0xfa, 0x5f, 0x52); // STATICCALL, MSTORE(0, success)
  out.push(0x3d, 0x5f, 0x60, 32, 0x3e); // RETURNDATACOPY(32, 0, RETURNDATASIZE)
  out.push(0x3d, 0x60, 32, 0x01, 0x5f, 0xf3); // RETURN(0, 32 + RETURNDATASIZE)
  return Uint8Array.from(out);
}

function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const all: number[] = [];
  for (const part of parts) all.push(...part);
  return Uint8Array.from(all);
}

/** `value` as a big-endian word. */
function wordOf(value: bigint): Uint8Array {
  return Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * (31 - i))) & 0xffn));
}

/**
 * Inputs of each precompile (0x01–0x0a) at their edges: empty, one byte short of a whole input,
 * whole, one byte long, and malformed in the ways each one checks (a `v` other than 27 or 28,
 * points off the curve, a pairing input that is not a multiple of 192 bytes, a BLAKE2 final
 * flag other than 0 or 1, MODEXP lengths that make it cost more than the call has).
 */
export function precompileInputs(next: () => number): [precompile: number, input: Uint8Array][] {
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => next() & 0xff);
  const cases: [number, Uint8Array][] = [];
  for (let p = 1; p <= 10; p++) cases.push([p, new Uint8Array(0)], [p, bytes(1 + (next() % 300))]);
  // ECRECOVER: hash, v, r, s
  const hash = bytes(32);
  const r = bytes(32);
  const s = bytes(32);
  for (const v of [27n, 28n, 29n, 0n, 27n + (1n << 8n)])
    cases.push([1, concat(hash, wordOf(v), r, s)]);
  cases.push([1, concat(hash, wordOf(27n), r)]); // 96 bytes: s taken as zero
  cases.push([1, concat(hash, wordOf(28n), r, s, [1])]); // one byte long
  cases.push([1, concat(hash, wordOf(27n), new Uint8Array(32), s)]); // r = 0
  // SHA-256, RIPEMD-160, IDENTITY at word edges
  for (const p of [2, 3, 4]) for (const n of [1, 31, 32, 33, 64, 65]) cases.push([p, bytes(n)]);
  // MODEXP: base, exponent and modulus lengths, then the numbers
  const modexp = (b: bigint, e: bigint, m: bigint, rest: Uint8Array) =>
    concat(wordOf(b), wordOf(e), wordOf(m), rest);
  cases.push([5, modexp(1n, 1n, 1n, Uint8Array.of(3, 5, 7))]);
  cases.push([5, modexp(1n, 1n, 1n, Uint8Array.of(3, 5))]); // modulus cut short: zero-padded
  cases.push([5, modexp(2n, 2n, 0n, bytes(4))]); // a zero-length modulus
  cases.push([5, modexp(1n, 1n, 1n, Uint8Array.of(3, 5, 0))]); // a zero modulus
  cases.push([5, modexp(32n, 32n, 32n, bytes(96))]);
  cases.push([5, modexp(1n, 1n << 20n, 1n, bytes(8))]); // an exponent that costs more than the call has
  cases.push([5, modexp(1n << 40n, 1n, 1n, bytes(8))]); // a length beyond any memory
  cases.push([5, bytes(95)]); // short of the three lengths
  // BN254: the generator (1, 2), a point off the curve (1, 3), infinity (0, 0)
  const g = concat(wordOf(1n), wordOf(2n));
  const off = concat(wordOf(1n), wordOf(3n));
  const zero = new Uint8Array(64);
  cases.push([6, concat(g, g)], [6, concat(g, zero)], [6, concat(g, off)], [6, concat(g)]);
  cases.push([6, concat(g, g, [1])], [6, concat(wordOf(1n << 255n), wordOf(2n), g)]);
  cases.push([7, concat(g, wordOf(2n))], [7, concat(g, wordOf(0n))], [7, concat(off, wordOf(3n))]);
  cases.push([7, concat(g, bytes(31))], [7, concat(g, bytes(33))]);
  cases.push([8, new Uint8Array(192)], [8, new Uint8Array(191)], [8, new Uint8Array(384)]);
  cases.push([8, concat(g, bytes(128))], [8, bytes(193)]);
  // BLAKE2F: rounds (4 bytes), h (64), m (128), t (16), final flag (1): 213 bytes
  const blake = (rounds: number, flag: number, extra = 0) =>
    concat([0, 0, (rounds >> 8) & 0xff, rounds & 0xff], bytes(64 + 128 + 16), [flag], bytes(extra));
  cases.push([9, blake(12, 1)], [9, blake(0, 0)], [9, blake(12, 2)], [9, blake(1, 1, 1)]);
  cases.push([9, blake(12, 1).subarray(0, 212)], [9, blake(0xffff, 1)]);
  // POINT EVALUATION (not a precompile on this chain): Ethereum's input length
  cases.push([10, bytes(192)], [10, bytes(191)]);
  return cases;
}
