import { concatBytes, readU32LE, writeU32LE } from "@nodex/types";
import { doubleSha256 } from "./doubleSha256.js";
import { malformed } from "./errors.js";

export interface BitcoinTxInput {
  /** Previous txid, raw order (all zeros for a coinbase). */
  readonly prevTxid: Uint8Array;
  readonly prevIndex: number;
  readonly scriptSig: Uint8Array;
  readonly sequence: number;
  /** Witness stack items (empty when the transaction has no witness). */
  readonly witness: readonly Uint8Array[];
}

export interface BitcoinTxOutput {
  /** Satoshis. */
  readonly value: bigint;
  readonly scriptPubKey: Uint8Array;
}

export interface BitcoinTransaction {
  readonly version: number;
  readonly inputs: readonly BitcoinTxInput[];
  readonly outputs: readonly BitcoinTxOutput[];
  readonly lockTime: number;
  /** Whether it was serialized with the segwit marker and flag. */
  readonly hasWitness: boolean;
}

/** A cursor over bytes that throws `MERGEMINING_MALFORMED` when it runs out. */
export class ByteReader {
  offset: number;
  constructor(
    readonly bytes: Uint8Array,
    offset = 0,
    private readonly what = "data",
  ) {
    this.offset = offset;
  }
  need(n: number): void {
    if (this.offset + n > this.bytes.length) {
      throw malformed(
        `${this.what}: need ${n} bytes at offset ${this.offset}, have ${this.bytes.length - this.offset}`,
        {
          offset: this.offset,
        },
      );
    }
  }
  u8(): number {
    this.need(1);
    return this.bytes[this.offset++]!;
  }
  u32(): number {
    this.need(4);
    const v = readU32LE(this.bytes, this.offset);
    this.offset += 4;
    return v;
  }
  u64(): bigint {
    const lo = this.u32();
    const hi = this.u32();
    return (BigInt(hi) << 32n) | BigInt(lo);
  }
  take(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.slice(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
  /** Bitcoin CompactSize; non-canonical forms are rejected (as Core does). */
  varint(): number {
    const first = this.u8();
    if (first < 0xfd) return first;
    let v: number;
    let min: number;
    if (first === 0xfd) {
      this.need(2);
      v = this.bytes[this.offset]! | (this.bytes[this.offset + 1]! << 8);
      this.offset += 2;
      min = 0xfd;
    } else if (first === 0xfe) {
      v = this.u32();
      min = 0x10000;
    } else {
      const big = this.u64();
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed(`${this.what}: varint too large`);
      v = Number(big);
      min = 0x100000000;
    }
    if (v < min) throw malformed(`${this.what}: non-canonical varint at offset ${this.offset}`);
    return v;
  }
  varBytes(): Uint8Array {
    return this.take(this.varint());
  }
}

export function encodeVarint(n: number): Uint8Array {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`bad varint ${n}`);
  if (n < 0xfd) return Uint8Array.of(n);
  if (n <= 0xffff) return Uint8Array.of(0xfd, n & 0xff, n >>> 8);
  if (n <= 0xffffffff) {
    const b = new Uint8Array(5);
    b[0] = 0xfe;
    writeU32LE(b, 1, n);
    return b;
  }
  const b = new Uint8Array(9);
  b[0] = 0xff;
  writeU32LE(b, 1, n % 0x100000000);
  writeU32LE(b, 5, Math.floor(n / 0x100000000));
  return b;
}

/** Reads one transaction at the reader's offset (legacy or segwit serialization). */
export function readBitcoinTransaction(r: ByteReader): BitcoinTransaction {
  const version = r.u32() | 0;
  let hasWitness = false;
  let inCount = r.varint();
  if (inCount === 0) {
    // Segwit: marker 0x00, then flag; a flag of 0 is not a valid serialization.
    const flag = r.u8();
    if (flag !== 1) throw malformed(`transaction: segwit flag must be 1, got ${flag}`);
    hasWitness = true;
    inCount = r.varint();
  }
  const ins: {
    prevTxid: Uint8Array;
    prevIndex: number;
    scriptSig: Uint8Array;
    sequence: number;
    witness: Uint8Array[];
  }[] = [];
  for (let i = 0; i < inCount; i++) {
    const prevTxid = r.take(32);
    const prevIndex = r.u32();
    const scriptSig = r.varBytes();
    const sequence = r.u32();
    ins.push({ prevTxid, prevIndex, scriptSig, sequence, witness: [] });
  }
  const outCount = r.varint();
  const outputs: BitcoinTxOutput[] = [];
  for (let i = 0; i < outCount; i++) {
    const value = r.u64();
    outputs.push({ value, scriptPubKey: r.varBytes() });
  }
  if (hasWitness) {
    for (const input of ins) {
      const n = r.varint();
      for (let j = 0; j < n; j++) input.witness.push(r.varBytes());
    }
  }
  const lockTime = r.u32();
  return { version, inputs: ins, outputs, lockTime, hasWitness };
}

/** Parses exactly one transaction; trailing bytes are an error. */
export function parseBitcoinTransaction(bytes: Uint8Array): BitcoinTransaction {
  const r = new ByteReader(bytes, 0, "transaction");
  const tx = readBitcoinTransaction(r);
  if (r.offset !== bytes.length) {
    throw malformed(`transaction: ${bytes.length - r.offset} trailing bytes`);
  }
  return tx;
}

/**
 * Serializes a transaction. `withWitness` (default: when it has a witness) writes the segwit
 * form; `false` gives the legacy form the txid hashes.
 */
export function encodeBitcoinTransaction(
  tx: BitcoinTransaction,
  withWitness = tx.hasWitness,
): Uint8Array {
  const parts: Uint8Array[] = [];
  const u32 = (v: number) => {
    const b = new Uint8Array(4);
    writeU32LE(b, 0, v);
    return b;
  };
  parts.push(u32(tx.version));
  if (withWitness) parts.push(Uint8Array.of(0, 1));
  parts.push(encodeVarint(tx.inputs.length));
  for (const i of tx.inputs) {
    parts.push(i.prevTxid, u32(i.prevIndex), encodeVarint(i.scriptSig.length), i.scriptSig);
    parts.push(u32(i.sequence));
  }
  parts.push(encodeVarint(tx.outputs.length));
  for (const o of tx.outputs) {
    parts.push(u32(Number(o.value & 0xffffffffn)), u32(Number(o.value >> 32n)));
    parts.push(encodeVarint(o.scriptPubKey.length), o.scriptPubKey);
  }
  if (withWitness) {
    for (const i of tx.inputs) {
      parts.push(encodeVarint(i.witness.length));
      for (const w of i.witness) parts.push(encodeVarint(w.length), w);
    }
  }
  parts.push(u32(tx.lockTime));
  return concatBytes(...parts);
}

/** The txid: double-SHA256 of the serialization without witness, raw order. */
export function txid(tx: BitcoinTransaction | Uint8Array): Uint8Array {
  const t = tx instanceof Uint8Array ? parseBitcoinTransaction(tx) : tx;
  return doubleSha256(encodeBitcoinTransaction(t, false));
}

/** The wtxid: double-SHA256 of the full serialization (equals the txid without witness). */
export function wtxid(tx: BitcoinTransaction): Uint8Array {
  return doubleSha256(encodeBitcoinTransaction(tx, tx.hasWitness));
}
