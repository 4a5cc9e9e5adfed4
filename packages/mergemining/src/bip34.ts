import { splitCompressedCoinbase } from "./coinbase.js";
import { parseBitcoinTransaction } from "./transaction.js";

/** Heights up to this are read from a coinbase: pushes of at most 5 bytes (2^39 − 1). */
const MAX_HEIGHT_PUSH = 5;
const OP_0 = 0x00;
const OP_1 = 0x51;
const OP_16 = 0x60;

/**
 * The start of a coinbase scriptSig that states `height` under BIP34, as Bitcoin Core writes and
 * checks it (`CScript() << nHeight`): OP_0 for 0, OP_1 … OP_16 for 1 … 16, otherwise a push of
 * the minimal little-endian script number (a 0x00 byte added when the top bit is set).
 */
export function encodeBip34Height(height: bigint): Uint8Array {
  if (height < 0n || height >= 1n << BigInt(8 * MAX_HEIGHT_PUSH - 1)) {
    throw new RangeError(`a BIP34 height is 0 … 2^39 − 1, got ${height}`);
  }
  if (height === 0n) return Uint8Array.of(OP_0);
  if (height <= 16n) return Uint8Array.of(OP_1 - 1 + Number(height));
  const bytes: number[] = [];
  for (let n = height; n > 0n; n >>= 8n) bytes.push(Number(n & 0xffn));
  if ((bytes[bytes.length - 1]! & 0x80) !== 0) bytes.push(0);
  return Uint8Array.of(bytes.length, ...bytes);
}

/**
 * The block height a coinbase scriptSig states under BIP34: its first operation, when that is
 * exactly what `encodeBip34Height` writes for some height; otherwise `undefined` (an extra-nonce
 * push, a non-minimal or negative number, an empty script).
 */
export function bip34Height(scriptSig: Uint8Array): bigint | undefined {
  const op = scriptSig[0];
  if (op === undefined) return undefined;
  if (op === OP_0) return 0n;
  if (op >= OP_1 && op <= OP_16) return BigInt(op - OP_1 + 1);
  if (op < 1 || op > MAX_HEIGHT_PUSH || scriptSig.length < 1 + op) return undefined;
  let height = 0n;
  for (let i = op; i >= 1; i--) height = (height << 8n) | BigInt(scriptSig[i]!);
  // Only the canonical form counts: it rejects negative numbers, padding and small heights
  // pushed as bytes, as Core's comparison with its own encoding does.
  if (height >= 1n << BigInt(8 * MAX_HEIGHT_PUSH - 1)) return undefined;
  const canonical = encodeBip34Height(height);
  if (canonical.length !== 1 + op) return undefined;
  for (let i = 0; i <= op; i++) if (canonical[i] !== scriptSig[i]) return undefined;
  return height;
}

/**
 * The Bitcoin block height a merged-mining proof's compressed coinbase states, or `undefined`
 * when it states none. The coinbase's start (where the scriptSig and its BIP34 height are) is
 * only there when nothing was hashed into the midstate (a byte count of 0, which
 * `compressCoinbase` gives when the `RSKBLOCK:` tag starts within the first 64 bytes); then the
 * tail must be one coinbase transaction (one input spending the null outpoint) whose scriptSig
 * starts with a BIP34 height. Malformed bytes state no height; nothing throws.
 */
export function coinbaseHeight(compressedCoinbase: Uint8Array): bigint | undefined {
  try {
    const { hashedLength, tail } = splitCompressedCoinbase(compressedCoinbase);
    if (hashedLength !== 0n) return undefined;
    const tx = parseBitcoinTransaction(tail);
    const input = tx.inputs[0];
    if (tx.inputs.length !== 1 || input === undefined) return undefined;
    if (input.prevIndex !== 0xffffffff || input.prevTxid.some((b) => b !== 0)) return undefined;
    return bip34Height(input.scriptSig);
  } catch {
    return undefined;
  }
}
