import { secp256k1 } from "@noble/curves/secp256k1.js";
import type { Address, Hash32 } from "../data.js";
import { privateKeyToAddress } from "../devAccounts.js";
import { NodexError } from "../errors.js";
import { bytesToHex } from "../hex.js";
import { keccak256 } from "../keccak.js";
import { recoverPublicKey } from "../signatureRecovery.js";
import {
  bigintToBytes,
  bytesToBigint,
  DecodeError,
  expectBytes,
  expectList,
  type RLPItem,
  rlpDecode,
  rlpEncode,
} from "./codec.js";

export const TransactionErrorCode = {
  TYPE_UNSUPPORTED: "TX_TYPE_UNSUPPORTED",
  INVALID_SIGNATURE: "TX_INVALID_SIGNATURE",
} as const;
export type TransactionErrorCode = (typeof TransactionErrorCode)[keyof typeof TransactionErrorCode];

export class TransactionError extends NodexError<TransactionErrorCode> {
  constructor(code: TransactionErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "TransactionError";
  }
}

/** What a sender fills in: a legacy transaction before signing. */
export interface UnsignedTransaction {
  readonly nonce: bigint;
  readonly gasPrice: bigint;
  readonly gasLimit: bigint;
  /** `null` creates a contract. */
  readonly to: Address | null;
  readonly value: bigint;
  readonly data: Uint8Array;
}

/** A signed legacy transaction, with what its signature tells. */
export interface SignedTransaction extends UnsignedTransaction {
  readonly v: bigint;
  readonly r: bigint;
  readonly s: bigint;
  /** EIP-155 chain id, or `undefined` for an unprotected signature (v = 27 or 28). */
  readonly chainId: number | undefined;
  readonly from: Address;
  readonly hash: Hash32;
  /** The signed RLP, as sent and as hashed. */
  readonly raw: Uint8Array;
}

const HALF_N = secp256k1.Point.CURVE().n >> 1n;
const N = secp256k1.Point.CURVE().n;

function unsignedItems(tx: UnsignedTransaction): RLPItem[] {
  return [
    bigintToBytes(tx.nonce),
    bigintToBytes(tx.gasPrice),
    bigintToBytes(tx.gasLimit),
    tx.to ?? new Uint8Array(),
    bigintToBytes(tx.value),
    tx.data,
  ];
}

/** The hash a sender signs: EIP-155 form with a chain id, the original six-field form without. */
export function signingHash(tx: UnsignedTransaction, chainId: number | undefined): Uint8Array {
  const items = unsignedItems(tx);
  if (chainId !== undefined)
    items.push(bigintToBytes(BigInt(chainId)), new Uint8Array(), new Uint8Array());
  return keccak256(rlpEncode(items));
}

/** Signs with EIP-155 replay protection for `chainId`. */
export function signTransaction(
  tx: UnsignedTransaction,
  privateKey: Uint8Array,
  chainId: number,
): SignedTransaction {
  const sig = secp256k1.Signature.fromBytes(
    secp256k1.sign(signingHash(tx, chainId), privateKey, { prehash: false, format: "recovered" }),
    "recovered",
  );
  const v = BigInt(chainId) * 2n + 35n + BigInt(sig.recovery!);
  const raw = rlpEncode([
    ...unsignedItems(tx),
    bigintToBytes(v),
    bigintToBytes(sig.r),
    bigintToBytes(sig.s),
  ]);
  return signedTransaction(
    tx,
    v,
    sig.r,
    sig.s,
    chainId,
    privateKeyToAddress(privateKey),
    keccak256(raw) as Hash32,
    raw,
  );
}

/**
 * The one shape of every `SignedTransaction`, field by field. Written out rather than spread
 * from `tx`: on V8 11 (Node 20) an object spread followed by more fields gets a hidden class of
 * its own each time, which makes every later read of a transaction's fields a slow lookup.
 */
function signedTransaction(
  tx: UnsignedTransaction,
  v: bigint,
  r: bigint,
  s: bigint,
  chainId: number | undefined,
  from: Address,
  hash: Hash32,
  raw: Uint8Array,
): SignedTransaction {
  return {
    nonce: tx.nonce,
    gasPrice: tx.gasPrice,
    gasLimit: tx.gasLimit,
    to: tx.to,
    value: tx.value,
    data: tx.data,
    v,
    r,
    s,
    chainId,
    from,
    hash,
    raw,
  };
}

/**
 * Decodes a signed transaction as received from a client or a peer: legacy RLP of nine items,
 * canonical integers, a valid low-s signature. Typed (EIP-2718) envelopes are refused.
 *
 * With `sender` (a transaction read back from the node's own store, whose sender was recovered
 * when it was imported), the signature's fields are still checked but no public key is
 * recovered: `sender` becomes `from` as given.
 */
export function decodeTransaction(raw: Uint8Array, sender?: Address): SignedTransaction {
  if (raw.length === 0) throw new DecodeError("invalid transaction: empty");
  const first = raw[0]!;
  if (first <= 0x7f) {
    throw new TransactionError(
      TransactionErrorCode.TYPE_UNSUPPORTED,
      `typed transactions (EIP-2718 type ${first}) are not supported: send a legacy transaction`,
      { type: first },
    );
  }
  return transactionFromItem(rlpDecode(raw, "transaction"), raw, sender);
}

/**
 * A transaction from its decoded RLP item; `raw` is its encoding (encoded again when absent).
 * With `sender`, no signature recovery: see `decodeTransaction`.
 */
export function transactionFromItem(
  item: RLPItem,
  raw: Uint8Array = rlpEncode(item),
  sender?: Address,
): SignedTransaction {
  const f = expectList(item, "transaction", 9);
  const toBytes = expectBytes(f[3], "transaction to");
  if (toBytes.length !== 0 && toBytes.length !== 20) {
    throw new DecodeError(
      `invalid transaction to: expected 20 bytes or none, got ${toBytes.length}`,
    );
  }
  const tx: UnsignedTransaction = {
    nonce: bytesToBigint(f[0]!, "transaction nonce", 8),
    gasPrice: bytesToBigint(f[1]!, "transaction gasPrice"),
    gasLimit: bytesToBigint(f[2]!, "transaction gasLimit", 8),
    to: toBytes.length === 0 ? null : (toBytes as Address),
    value: bytesToBigint(f[4]!, "transaction value"),
    data: expectBytes(f[5], "transaction data"),
  };
  const v = bytesToBigint(f[6]!, "transaction v");
  const r = bytesToBigint(f[7]!, "transaction r");
  const s = bytesToBigint(f[8]!, "transaction s");
  let chainId: number | undefined;
  let recovery: number;
  if (v === 27n || v === 28n) {
    recovery = Number(v - 27n);
  } else if (v >= 37n) {
    const id = (v - 35n) / 2n;
    if (id > BigInt(Number.MAX_SAFE_INTEGER))
      throw invalidSignature(`chain id in v ${v} is too large`);
    chainId = Number(id);
    recovery = Number((v - 35n) % 2n);
  } else {
    throw invalidSignature(`v ${v} is neither 27, 28 nor an EIP-155 value`);
  }
  if (r === 0n || r >= N) throw invalidSignature("r is out of range");
  if (s === 0n || s >= N) throw invalidSignature("s is out of range");
  if (s > HALF_N) throw invalidSignature("s is in the upper half of the curve order (EIP-2)");
  if (sender !== undefined) {
    if (sender.length !== 20) {
      throw new DecodeError(`invalid transaction sender: expected 20 bytes, got ${sender.length}`);
    }
    return signedTransaction(tx, v, r, s, chainId, sender, keccak256(raw) as Hash32, raw);
  }
  const hash = keccak256(raw) as Hash32;
  const key = bytesToHex(hash);
  const known = senders.get(key);
  if (known !== undefined)
    return signedTransaction(tx, v, r, s, chainId, known.slice() as Address, hash, raw);
  // r and s as sent are canonical (no leading zeros, checked above): left-padded, they are the
  // signature; the first six items as sent are the fields the signer hashed.
  const rBytes = f[7] as Uint8Array;
  const sBytes = f[8] as Uint8Array;
  const signature = new Uint8Array(64);
  signature.set(rBytes, 32 - rBytes.length);
  signature.set(sBytes, 64 - sBytes.length);
  const signed = f.slice(0, 6);
  if (chainId !== undefined)
    signed.push(bigintToBytes(BigInt(chainId)), new Uint8Array(), new Uint8Array());
  const publicKey = recoverPublicKey(keccak256(rlpEncode(signed)), signature, recovery);
  if (publicKey === undefined) throw invalidSignature("no public key recovers from it");
  const from = keccak256(publicKey).slice(12) as Address;
  senders.set(key, from.slice() as Address);
  if (senders.size > SENDER_CACHE_SIZE) senders.delete(senders.keys().next().value!);
  return signedTransaction(tx, v, r, s, chainId, from, hash, raw);
}

/**
 * Senders recovered lately, by transaction hash (of the signed RLP, which fixes the signing hash
 * and the signature): a transaction admitted to the pool, then imported in a peer's block, is
 * recovered once. 6,000 entries, as the reference node keeps; the oldest goes first.
 */
const SENDER_CACHE_SIZE = 6_000;
const senders = new Map<string, Address>();

/** Forgets the recovered senders (tests that count recoveries start from here). */
export function clearSenderCache(): void {
  senders.clear();
}

function invalidSignature(why: string): TransactionError {
  return new TransactionError(
    TransactionErrorCode.INVALID_SIGNATURE,
    `invalid transaction signature: ${why}`,
  );
}

/** The senders of `txs`, stored beside a block's body: their 20-byte addresses, one after the other. */
export function encodeSenders(txs: readonly SignedTransaction[]): Uint8Array {
  const out = new Uint8Array(txs.length * 20);
  for (const [i, tx] of txs.entries()) {
    if (tx.from.length !== 20) {
      throw new DecodeError(`invalid transaction sender: expected 20 bytes, got ${tx.from.length}`);
    }
    out.set(tx.from, i * 20);
  }
  return out;
}

/** The addresses `encodeSenders` wrote; throws `DecodeError` when the length is not a multiple of 20. */
export function decodeSenders(bytes: Uint8Array): Address[] {
  if (bytes.length % 20 !== 0) {
    throw new DecodeError(
      `invalid block senders: ${bytes.length} bytes is not a whole number of 20-byte addresses`,
    );
  }
  const out: Address[] = [];
  for (let o = 0; o < bytes.length; o += 20) out.push(bytes.slice(o, o + 20) as Address);
  return out;
}

/** The address a contract created by `sender` with `nonce` gets: keccak256(rlp([sender, nonce]))[12:]. */
export function contractAddress(sender: Uint8Array, nonce: bigint): Address {
  return keccak256(rlpEncode([sender, bigintToBytes(nonce)])).slice(12) as Address;
}
