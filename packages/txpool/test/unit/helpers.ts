import {
  type Address,
  bytesToHex,
  keccak256,
  type SignedTransaction,
  signTransaction,
} from "@nodex/types";
import type { PoolAccountState, PoolHead } from "../../src/index.js";

export const CHAIN_ID = 33;
export const GWEI = 1_000_000_000n;
export const TRANSFER_GAS = 21_000n;
export const RICH = 10n ** 24n;

/** An account state kept in memory: unknown accounts have nonce 0 and no balance. */
export class MemState implements PoolAccountState {
  readonly nonces = new Map<string, bigint>();
  readonly balances = new Map<string, bigint>();

  async getAccount(a: Address): Promise<{ nonce: bigint; balance: bigint } | undefined> {
    const key = bytesToHex(a);
    const nonce = this.nonces.get(key);
    const balance = this.balances.get(key);
    if (nonce === undefined && balance === undefined) return undefined;
    return { nonce: nonce ?? 0n, balance: balance ?? 0n };
  }

  set(a: Address, fields: { nonce?: bigint; balance?: bigint }): this {
    if (fields.nonce !== undefined) this.nonces.set(bytesToHex(a), fields.nonce);
    if (fields.balance !== undefined) this.balances.set(bytesToHex(a), fields.balance);
    return this;
  }
}

export function head(state: PoolAccountState, fields: Partial<PoolHead> = {}): PoolHead {
  return { number: 1n, gasLimit: 6_800_000n, minimumGasPrice: 1n, state, ...fields };
}

const keys: Uint8Array[] = [];
/** The private key of test account `i`: keccak256("txpool test i"). */
export function key(i: number): Uint8Array {
  keys[i] ??= keccak256(new TextEncoder().encode(`txpool test ${i}`));
  return keys[i]!;
}

export const RECIPIENT = new Uint8Array(20).fill(0xaa) as Address;

const cache = new Map<string, SignedTransaction>();

/** A signed transfer of sender `i` (cached: the same arguments give the same transaction). */
export function transfer(
  i: number,
  nonce: bigint | number,
  gasPrice: bigint | number = GWEI,
  extra: {
    gasLimit?: bigint;
    value?: bigint;
    data?: Uint8Array;
    to?: Address | null;
    chainId?: number;
  } = {},
): SignedTransaction {
  const id = `${i}/${nonce}/${gasPrice}/${extra.gasLimit}/${extra.value}/${extra.data?.length}/${extra.to === null}/${extra.chainId}`;
  let tx = cache.get(id);
  if (tx === undefined) {
    tx = signTransaction(
      {
        nonce: BigInt(nonce),
        gasPrice: BigInt(gasPrice),
        gasLimit: extra.gasLimit ?? TRANSFER_GAS,
        to: extra.to === undefined ? RECIPIENT : extra.to,
        value: extra.value ?? 1n,
        data: extra.data ?? new Uint8Array(),
      },
      key(i),
      extra.chainId ?? CHAIN_ID,
    );
    cache.set(id, tx);
  }
  return tx;
}

export function sender(i: number): Address {
  return transfer(i, 0).from;
}

/** A state where senders 0 … n-1 are rich, at nonce 0. */
export function richState(n: number): MemState {
  const state = new MemState();
  for (let i = 0; i < n; i++) state.set(sender(i), { balance: RICH });
  return state;
}

export function nonces(txs: readonly SignedTransaction[]): bigint[] {
  return txs.map((t) => t.nonce);
}
