import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToBigintBE } from "../bytes.js";
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

/**
 * The transaction formats: legacy, and the EIP-2718 envelopes of RSKIP546 (with RSKIP543's
 * envelope), type 1 with EIP-2930's fields and type 2 with EIP-1559's. Both typed ones run as a
 * legacy transaction does: no base fee, nothing burnt, the access list not warming anything.
 */
export const TransactionType = { LEGACY: 0, ACCESS_LIST: 1, DYNAMIC_FEE: 2 } as const;
export type TransactionType = (typeof TransactionType)[keyof typeof TransactionType];

/** An access list's entry: an account and slots of its storage. */
export interface AccessListEntry {
  readonly address: Address;
  readonly storageKeys: readonly Hash32[];
}

/** What a sender fills in: a transaction before signing (legacy unless `type` says otherwise). */
export interface UnsignedTransaction {
  readonly nonce: bigint;
  /**
   * The price of a unit of gas. For type 2 it is RSKIP546's effective gas price,
   * `min(maxPriorityFeePerGas, maxFeePerGas)` (what `GASPRICE` answers): `signTransaction`
   * and the decoder set it so, whatever a type 2 transaction given to them says here.
   */
  readonly gasPrice: bigint;
  readonly gasLimit: bigint;
  /** `null` creates a contract. */
  readonly to: Address | null;
  readonly value: bigint;
  readonly data: Uint8Array;
  /** 0 (legacy) when absent. */
  readonly type?: TransactionType;
  /** Types 1 and 2 (empty when absent). */
  readonly accessList?: readonly AccessListEntry[];
  /** Type 2. */
  readonly maxPriorityFeePerGas?: bigint | undefined;
  /** Type 2. */
  readonly maxFeePerGas?: bigint | undefined;
}

/** A signed transaction, with what its signature tells. */
export interface SignedTransaction extends UnsignedTransaction {
  readonly type: TransactionType;
  readonly accessList: readonly AccessListEntry[];
  readonly maxPriorityFeePerGas: bigint | undefined;
  readonly maxFeePerGas: bigint | undefined;
  /**
   * The length of the RLP of the access list as signed (an empty list is 1 byte: `0xc0`); 0
   * for a legacy transaction. RSKIP546 charges 80 gas a byte of it.
   */
  readonly accessListBytes: number;
  /** Legacy: 27/28 or the EIP-155 value; typed: the signature's y parity (0 or 1). */
  readonly v: bigint;
  readonly r: bigint;
  readonly s: bigint;
  /**
   * The chain id the signature commits to: EIP-155's for a legacy transaction (`undefined`
   * for an unprotected one, v = 27 or 28), the first field of a typed one.
   */
  readonly chainId: number | undefined;
  readonly from: Address;
  readonly hash: Hash32;
  /**
   * As sent and as hashed: the legacy RLP, or a typed transaction's envelope (its type byte,
   * then the RLP of its fields). In a block's list of transactions an envelope is an RLP byte
   * string (`transactionListItem`).
   */
  readonly raw: Uint8Array;
}

const HALF_N = secp256k1.Point.CURVE().n >> 1n;
const N = secp256k1.Point.CURVE().n;

function legacyItems(tx: UnsignedTransaction): RLPItem[] {
  return [
    bigintToBytes(tx.nonce),
    bigintToBytes(tx.gasPrice),
    bigintToBytes(tx.gasLimit),
    tx.to ?? new Uint8Array(),
    bigintToBytes(tx.value),
    tx.data,
  ];
}

function accessListItem(list: readonly AccessListEntry[]): RLPItem {
  return list.map((entry) => [entry.address, [...entry.storageKeys]]);
}

/** A type 2 transaction's gas price under RSKIP546: the lower of its two fees. */
export function dynamicFeeGasPrice(maxPriorityFeePerGas: bigint, maxFeePerGas: bigint): bigint {
  return maxPriorityFeePerGas < maxFeePerGas ? maxPriorityFeePerGas : maxFeePerGas;
}

/** The fields a typed transaction signs, in its type's order (its RLP list without v, r, s). */
function typedItems(tx: UnsignedTransaction, type: 1 | 2, chainId: number): RLPItem[] {
  const common = [bigintToBytes(tx.gasLimit), tx.to ?? new Uint8Array(), bigintToBytes(tx.value)];
  const fees =
    type === 1
      ? [bigintToBytes(tx.gasPrice)]
      : [
          bigintToBytes(requireFee(tx.maxPriorityFeePerGas, "maxPriorityFeePerGas")),
          bigintToBytes(requireFee(tx.maxFeePerGas, "maxFeePerGas")),
        ];
  return [
    bigintToBytes(BigInt(chainId)),
    bigintToBytes(tx.nonce),
    ...fees,
    ...common,
    tx.data,
    accessListItem(tx.accessList ?? []),
  ];
}

function requireFee(fee: bigint | undefined, name: string): bigint {
  if (fee === undefined) throw new TypeError(`a type 2 transaction needs ${name}`);
  return fee;
}

function withType(type: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = type;
  out.set(payload, 1);
  return out;
}

/**
 * The hash a sender signs. Legacy: EIP-155's form with a chain id, the original six fields
 * without. Typed: keccak256 of the type byte and the RLP of its fields (`chainId` required).
 */
export function signingHash(tx: UnsignedTransaction, chainId: number | undefined): Uint8Array {
  const type = tx.type ?? 0;
  if (type !== 0) {
    if (chainId === undefined) throw new TypeError("a typed transaction signs a chain id");
    return keccak256(withType(type, rlpEncode(typedItems(tx, type, chainId))));
  }
  const items = legacyItems(tx);
  if (chainId !== undefined)
    items.push(bigintToBytes(BigInt(chainId)), new Uint8Array(), new Uint8Array());
  return keccak256(rlpEncode(items));
}

/**
 * Signs for `chainId`: a legacy transaction with EIP-155 replay protection, a typed one in its
 * envelope. A type 2 transaction's `gasPrice` becomes `min(maxPriorityFeePerGas, maxFeePerGas)`.
 * `from`, when the caller holds the key's address beside it (a wallet), saves deriving it again,
 * which costs as much as the signature.
 */
export function signTransaction(
  tx: UnsignedTransaction,
  privateKey: Uint8Array,
  chainId: number,
  from?: Address,
): SignedTransaction {
  const unsigned = withEffectivePrice(tx);
  const sig = secp256k1.Signature.fromBytes(
    secp256k1.sign(signingHash(unsigned, chainId), privateKey, {
      prehash: false,
      format: "recovered",
    }),
    "recovered",
  );
  return assemble(
    unsigned,
    chainId,
    sig.recovery!,
    sig.r,
    sig.s,
    from ?? privateKeyToAddress(privateKey),
  );
}

/**
 * A transaction of `from` made without its key: what a development network sends for an
 * impersonated account (`hardhat_impersonateAccount`, `eth_sendUnsignedTransaction`). Its
 * signature is a placeholder in the valid range (r from the sender's address, s = 1) from which
 * no one's key recovers; the node keeps the sender beside the transaction, as it keeps every
 * sender it recovered, and reads it back from there. Other nodes cannot recover it: such a
 * transaction lives only on the node that made it.
 */
export function impersonatedTransaction(
  tx: UnsignedTransaction,
  from: Address,
  chainId: number,
): SignedTransaction {
  return assemble(withEffectivePrice(tx), chainId, 0, impersonationR(from), 1n, from);
}

/** The placeholder signature's r for `from` (its s is 1). */
function impersonationR(from: Address): bigint {
  return (bytesToBigintBE(keccak256(from)) % (N - 1n)) + 1n;
}

/** Whether `tx` was made by `impersonatedTransaction` (its placeholder signature names `tx.from`). */
export function isImpersonatedTransaction(tx: SignedTransaction): boolean {
  return tx.s === 1n && tx.r === impersonationR(tx.from);
}

/**
 * Decodes a transaction of `impersonatedTransaction` read back with its sender (a journal
 * line): refused unless its placeholder signature is the one made for `sender`, so that a
 * sender is never taken on trust for a transaction someone signed.
 */
export function decodeImpersonatedTransaction(raw: Uint8Array, sender: Address): SignedTransaction {
  const tx = decodeTransaction(raw, sender);
  if (!isImpersonatedTransaction(tx))
    throw invalidSignature(`it is not a placeholder signature for ${bytesToHex(sender)}`);
  return tx;
}

/** A type 2 transaction's `gasPrice` is `min(maxPriorityFeePerGas, maxFeePerGas)`. */
function withEffectivePrice(tx: UnsignedTransaction): UnsignedTransaction {
  if ((tx.type ?? 0) !== 2) return tx;
  return {
    ...tx,
    gasPrice: dynamicFeeGasPrice(
      requireFee(tx.maxPriorityFeePerGas, "maxPriorityFeePerGas"),
      requireFee(tx.maxFeePerGas, "maxFeePerGas"),
    ),
  };
}

/** The signed form of `unsigned` with signature `recovery, r, s` of `from`. */
function assemble(
  unsigned: UnsignedTransaction,
  chainId: number,
  recovery: number,
  r: bigint,
  s: bigint,
  from: Address,
): SignedTransaction {
  const type = unsigned.type ?? 0;
  if (type !== 0) {
    const items = typedItems(unsigned, type, chainId);
    const listBytes = rlpEncode(items[items.length - 1]!).length;
    const raw = withType(
      type,
      rlpEncode([...items, bigintToBytes(BigInt(recovery)), bigintToBytes(r), bigintToBytes(s)]),
    );
    return signedTransaction(
      unsigned,
      type,
      listBytes,
      BigInt(recovery),
      r,
      s,
      chainId,
      from,
      keccak256(raw) as Hash32,
      raw,
    );
  }
  const v = BigInt(chainId) * 2n + 35n + BigInt(recovery);
  const raw = rlpEncode([
    ...legacyItems(unsigned),
    bigintToBytes(v),
    bigintToBytes(r),
    bigintToBytes(s),
  ]);
  return signedTransaction(unsigned, 0, 0, v, r, s, chainId, from, keccak256(raw) as Hash32, raw);
}

/**
 * The one shape of every `SignedTransaction`, field by field. Written out rather than spread
 * from `tx`: on V8 11 (Node 20) an object spread followed by more fields gets a hidden class of
 * its own each time, which makes every later read of a transaction's fields a slow lookup.
 */
function signedTransaction(
  tx: UnsignedTransaction,
  type: TransactionType,
  accessListBytes: number,
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
    type,
    accessList: type === 0 ? NO_ACCESS_LIST : (tx.accessList ?? NO_ACCESS_LIST),
    maxPriorityFeePerGas: type === 2 ? tx.maxPriorityFeePerGas : undefined,
    maxFeePerGas: type === 2 ? tx.maxFeePerGas : undefined,
    accessListBytes,
    v,
    r,
    s,
    chainId,
    from,
    hash,
    raw,
  };
}

const NO_ACCESS_LIST: readonly AccessListEntry[] = Object.freeze([]);

/** A transaction as an item of a block's list: the legacy RLP, or a typed envelope as a byte string. */
export function transactionListItem(tx: SignedTransaction): Uint8Array {
  return tx.type === 0 ? tx.raw : rlpEncode(tx.raw);
}

/**
 * Decodes a signed transaction as received from a client or a peer: legacy RLP of nine items,
 * or a type 1 or type 2 envelope (RSKIP546); canonical integers, a valid low-s signature.
 * Whether a network takes typed transactions at a given height is for the caller to check
 * (`typedTransactionsActive`). Other types are refused (`TYPE_UNSUPPORTED`).
 *
 * With `sender` (a transaction read back from the node's own store, whose sender was recovered
 * when it was imported), the signature's fields are still checked but no public key is
 * recovered: `sender` becomes `from` as given.
 */
export function decodeTransaction(raw: Uint8Array, sender?: Address): SignedTransaction {
  if (raw.length === 0) throw new DecodeError("invalid transaction: empty");
  if (raw[0]! <= 0x7f) return typedTransaction(raw, sender);
  return legacyTransaction(rlpDecode(raw, "transaction"), raw, sender);
}

/**
 * A transaction from its item in a block's list: a legacy transaction's RLP list, or a typed
 * envelope as a byte string. `raw` is a legacy transaction's encoding (encoded again when
 * absent). With `sender`, no signature recovery: see `decodeTransaction`.
 */
export function transactionFromItem(
  item: RLPItem,
  raw?: Uint8Array,
  sender?: Address,
): SignedTransaction {
  if (item instanceof Uint8Array) {
    if (item.length === 0 || item[0]! > 0x7f)
      throw new DecodeError("invalid transaction: a byte string that is not a typed envelope");
    return typedTransaction(item, sender);
  }
  return legacyTransaction(item, raw ?? rlpEncode(item), sender);
}

function legacyTransaction(
  item: RLPItem,
  encoded: Uint8Array,
  sender?: Address,
): SignedTransaction {
  const f = expectList(item, "transaction", 9);
  const tx: UnsignedTransaction = {
    nonce: bytesToBigint(f[0]!, "transaction nonce", 8),
    gasPrice: bytesToBigint(f[1]!, "transaction gasPrice"),
    gasLimit: bytesToBigint(f[2]!, "transaction gasLimit", 8),
    to: recipient(f[3]!),
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
  checkSignature(r, s);
  const hash = keccak256(encoded) as Hash32;
  const signed = () => {
    // The first six items as sent are the fields the signer hashed.
    const items = f.slice(0, 6);
    if (chainId !== undefined)
      items.push(bigintToBytes(BigInt(chainId)), new Uint8Array(), new Uint8Array());
    return keccak256(rlpEncode(items));
  };
  const from =
    sender ?? recoverSender(hash, signed, f[7] as Uint8Array, f[8] as Uint8Array, recovery);
  return signedTransaction(tx, 0, 0, v, r, s, chainId, checkSender(from), hash, encoded);
}

/** A type 1 or type 2 envelope: the type byte, then the RLP list of the type's fields. */
function typedTransaction(raw: Uint8Array, sender?: Address): SignedTransaction {
  const type = raw[0]!;
  if (type !== 1 && type !== 2) {
    throw new TransactionError(
      TransactionErrorCode.TYPE_UNSUPPORTED,
      `transaction type ${type} is not supported: send a legacy, type 1 or type 2 transaction`,
      { type },
    );
  }
  const what = `type ${type} transaction`;
  const f = expectList(rlpDecode(raw.subarray(1), what), what, type === 1 ? 11 : 12);
  const id = bytesToBigint(f[0]!, `${what} chainId`, 8);
  if (id > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidSignature(`chain id ${id} is too large`);
  // After the fees, both types have the same fields in the same order.
  const at = type === 1 ? 3 : 4;
  const maxPriorityFeePerGas =
    type === 2 ? bytesToBigint(f[2]!, `${what} maxPriorityFeePerGas`) : undefined;
  const maxFeePerGas = type === 2 ? bytesToBigint(f[3]!, `${what} maxFeePerGas`) : undefined;
  const accessListField = f[at + 4]!;
  const tx: UnsignedTransaction = {
    nonce: bytesToBigint(f[1]!, `${what} nonce`, 8),
    gasPrice:
      type === 1
        ? bytesToBigint(f[2]!, `${what} gasPrice`)
        : dynamicFeeGasPrice(maxPriorityFeePerGas!, maxFeePerGas!),
    gasLimit: bytesToBigint(f[at]!, `${what} gasLimit`, 8),
    to: recipient(f[at + 1]!),
    value: bytesToBigint(f[at + 2]!, `${what} value`),
    data: expectBytes(f[at + 3], `${what} data`),
    type,
    accessList: decodeAccessList(accessListField, what),
    maxPriorityFeePerGas,
    maxFeePerGas,
  };
  const v = bytesToBigint(f[at + 5]!, `${what} yParity`);
  if (v > 1n) throw invalidSignature(`y parity ${v} is neither 0 nor 1`);
  const r = bytesToBigint(f[at + 6]!, `${what} r`);
  const s = bytesToBigint(f[at + 7]!, `${what} s`);
  checkSignature(r, s);
  const hash = keccak256(raw) as Hash32;
  const signed = () => keccak256(withType(type, rlpEncode(f.slice(0, at + 5))));
  const from =
    sender ??
    recoverSender(hash, signed, f[at + 6] as Uint8Array, f[at + 7] as Uint8Array, Number(v));
  const listBytes = rlpEncode(accessListField).length;
  return signedTransaction(tx, type, listBytes, v, r, s, Number(id), checkSender(from), hash, raw);
}

function recipient(item: RLPItem): Address | null {
  const to = expectBytes(item, "transaction to");
  if (to.length !== 0 && to.length !== 20)
    throw new DecodeError(`invalid transaction to: expected 20 bytes or none, got ${to.length}`);
  return to.length === 0 ? null : (to as Address);
}

function decodeAccessList(item: RLPItem, what: string): AccessListEntry[] {
  return expectList(item, `${what} accessList`).map((entry, i) => {
    const [address, keys] = expectList(entry, `${what} accessList entry ${i}`, 2);
    return {
      address: expectBytes(address, `${what} accessList entry ${i} address`, 20) as Address,
      storageKeys: expectList(keys!, `${what} accessList entry ${i} storageKeys`).map(
        (key, j) =>
          expectBytes(key, `${what} accessList entry ${i} storage key ${j}`, 32) as Hash32,
      ),
    };
  });
}

function checkSignature(r: bigint, s: bigint): void {
  if (r === 0n || r >= N) throw invalidSignature("r is out of range");
  if (s === 0n || s >= N) throw invalidSignature("s is out of range");
  if (s > HALF_N) throw invalidSignature("s is in the upper half of the curve order (EIP-2)");
}

function checkSender(sender: Address): Address {
  if (sender.length !== 20)
    throw new DecodeError(`invalid transaction sender: expected 20 bytes, got ${sender.length}`);
  return sender;
}

/**
 * The sender of the transaction `hash`: from the cache of recovered senders, or recovered from
 * the hash the signer signed (`signed`, computed only then) and r, s as sent (canonical, so
 * left-padded they are the signature).
 */
function recoverSender(
  hash: Hash32,
  signed: () => Uint8Array,
  rBytes: Uint8Array,
  sBytes: Uint8Array,
  recovery: number,
): Address {
  const key = bytesToHex(hash);
  const known = senders.get(key);
  if (known !== undefined) return known.slice() as Address;
  const signature = new Uint8Array(64);
  signature.set(rBytes, 32 - rBytes.length);
  signature.set(sBytes, 64 - sBytes.length);
  const publicKey = recoverPublicKey(signed(), signature, recovery);
  if (publicKey === undefined) throw invalidSignature("no public key recovers from it");
  const from = keccak256(publicKey).slice(12) as Address;
  senders.set(key, from.slice() as Address);
  if (senders.size > SENDER_CACHE_SIZE) senders.delete(senders.keys().next().value!);
  return from;
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
