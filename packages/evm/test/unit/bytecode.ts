/** Init code that deploys `runtime`: PUSH2 n, DUP1, PUSH1 12, PUSH1 0, CODECOPY, PUSH1 0, RETURN. */
export function deployCode(runtime: Uint8Array): Uint8Array {
  const n = runtime.length;
  return Uint8Array.from([
    0x61,
    n >> 8,
    n & 0xff,
    0x80,
    0x60,
    12,
    0x60,
    0,
    0x39,
    0x60,
    0,
    0xf3,
    ...runtime,
  ]);
}
