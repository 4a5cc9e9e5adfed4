import { bytesToHex, encodeQuantity, type SignedTransaction } from "@nodex/types";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { PoolView } from "../services.js";
import { formatTransaction } from "./format.js";

const ZERO_HASH = `0x${"00".repeat(32)}`;

/**
 * A value as the reference node prints its `Coin` amounts here: the bytes of Java's
 * `BigInteger.toByteArray()` (minimal two's complement, so `0x00` for zero and a leading zero
 * byte when the top bit is set), not a QUANTITY.
 */
function javaBytes(value: bigint): string {
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  if (Number.parseInt(hex.slice(0, 2), 16) >= 0x80) hex = `00${hex}`;
  return `0x${hex}`;
}

/** A pool transaction in `txpool_content`'s form (the reference node's). */
function contentTransaction(tx: SignedTransaction): Record<string, unknown> {
  return {
    blockHash: ZERO_HASH,
    blockNumber: null,
    transactionIndex: null,
    from: bytesToHex(tx.from),
    gas: encodeQuantity(tx.gasLimit),
    gasPrice: javaBytes(tx.gasPrice),
    hash: bytesToHex(tx.hash),
    input: bytesToHex(tx.data),
    nonce: encodeQuantity(tx.nonce),
    to: tx.to === null ? "0x00" : bytesToHex(tx.to),
    value: javaBytes(tx.value),
  };
}

/** `txpool_inspect`'s one-line summary of a transaction. */
function inspectLine(tx: SignedTransaction): string {
  const to = tx.to === null ? "0x00" : bytesToHex(tx.to);
  return `${to}: ${tx.value} wei + ${tx.gasLimit} x ${tx.gasPrice} gas`;
}

/** `{<sender without 0x>: {<nonce in decimal>: [item]}}`, as the reference node groups them. */
function bySenderAndNonce<T>(
  groups: ReadonlyMap<string, readonly SignedTransaction[]>,
  item: (tx: SignedTransaction) => T,
): Record<string, Record<string, T[]>> {
  const out: Record<string, Record<string, T[]>> = {};
  for (const [sender, txs] of groups) {
    const byNonce: Record<string, T[]> = {};
    for (const tx of txs) {
      const nonce = tx.nonce.toString(10);
      byNonce[nonce] = [...(byNonce[nonce] ?? []), item(tx)];
    }
    out[sender.replace(/^0x/, "")] = byNonce;
  }
  return out;
}

/** The txpool module, and `eth_pendingTransactions` (the node operator's waiting transactions). */
export function txpoolModules(pool: PoolView) {
  const txpool = defineModule("txpool", {
    content: method({
      params: [],
      result: r.json,
      handler: () => {
        const { pending, queued } = pool.content();
        return {
          pending: bySenderAndNonce(pending, contentTransaction),
          queued: bySenderAndNonce(queued, contentTransaction),
        };
      },
    }),
    // Geth's one-sender view: each nonce maps to its one transaction (no list), in the entries'
    // form of txpool_content.
    contentFrom: method({
      params: [p.address],
      result: r.json,
      handler: (_s, [address]) => {
        const sender = bytesToHex(address);
        const { pending, queued } = pool.content();
        const byNonce = (txs: readonly SignedTransaction[] | undefined) =>
          Object.fromEntries(
            (txs ?? []).map((tx) => [tx.nonce.toString(10), contentTransaction(tx)]),
          );
        return { pending: byNonce(pending.get(sender)), queued: byNonce(queued.get(sender)) };
      },
    }),
    inspect: method({
      params: [],
      result: r.json,
      handler: () => {
        const { pending, queued } = pool.content();
        return {
          pending: bySenderAndNonce(pending, inspectLine),
          queued: bySenderAndNonce(queued, inspectLine),
        };
      },
    }),
    status: method({
      params: [],
      result: r.json,
      handler: () => pool.status(),
    }),
  });
  const eth = defineModule("eth", {
    pendingTransactions: method({
      params: [],
      result: r.json,
      handler: ({ accounts }, _args, { hosted }) => {
        if (hosted) return [];
        const own = new Set(accounts.list().map((a) => bytesToHex(a)));
        const { pending, queued } = pool.content();
        return [...pending.values(), ...queued.values()]
          .flat()
          .filter((tx) => own.has(bytesToHex(tx.from)))
          .map((tx) => ({ ...formatTransaction(tx, undefined, 0), blockHash: ZERO_HASH }));
      },
    }),
  });
  return [txpool, eth];
}
