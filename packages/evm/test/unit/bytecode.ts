import { hexToBytes, signTransaction, type UnsignedTransaction } from "@nodex/types";

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

/** A signed legacy transaction on regtest (chain 33), a creation unless `fields` say otherwise. */
export function regtestTx(
  fields: Partial<UnsignedTransaction>,
  nonce: bigint,
  privateKey: Uint8Array,
  gasLimit = 300_000n,
) {
  return signTransaction(
    { nonce, gasPrice: 1n, gasLimit, to: null, value: 0n, data: new Uint8Array(), ...fields },
    privateKey,
    33,
  );
}

/** Appends the shortest PUSH of `value` (PUSH0 for zero). */
export function push(out: number[], value: bigint): void {
  if (value === 0n) {
    out.push(0x5f);
    return;
  }
  const hex = value.toString(16);
  const bytes = hexToBytes(`0x${hex.length % 2 === 0 ? hex : `0${hex}`}`);
  out.push(0x5f + bytes.length, ...bytes);
}

/** A call of `kind` (CALL, CALLCODE, DELEGATECALL, STATICCALL) as a contract makes it. */
export interface CallSite {
  readonly kind: 0xf1 | 0xf2 | 0xf4 | 0xfa;
  readonly target: Uint8Array;
  /** Gas to give; none: all (GAS). */
  readonly gas: bigint | undefined;
  /** For CALL and CALLCODE. */
  readonly value: bigint;
  readonly retOffset: bigint;
  readonly argsSize: bigint;
}

/**
 * Appends the call, arguments from memory 0, 32 bytes of return data to `retOffset`, then
 * SSTORE(slot, success) and SSTORE(16 + slot, RETURNDATASIZE).
 */
export function pushCall(out: number[], call: CallSite, slot: number): void {
  push(out, 32n); // retSize
  push(out, call.retOffset);
  push(out, call.argsSize);
  push(out, 0n); // argsOffset
  if (call.kind === 0xf1 || call.kind === 0xf2) push(out, call.value);
  push(out, BigInt(`0x${Buffer.from(call.target).toString("hex")}`));
  if (call.gas === undefined) out.push(0x5a);
  else push(out, call.gas);
  out.push(call.kind);
  push(out, BigInt(slot));
  out.push(0x55, 0x3d);
  push(out, BigInt(16 + slot));
  out.push(0x55);
}
