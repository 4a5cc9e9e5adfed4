import { randomBytes } from "node:crypto";
import type { HeadChange, StoredBlock } from "@nodex/chain";
import { bytesToHex, type Logger, type SignedTransaction } from "@nodex/types";
import { RPCError, RPCErrorCode } from "./errors.js";
import { headChangeLogs } from "./logFilter.js";
import { formatBlock, formatLog, formatTransaction } from "./modules/format.js";
import type { NodeEvents, SubscriptionKind, SubscriptionRequest, SyncStatus } from "./services.js";
import { syncStatusJson } from "./syncStatus.js";

/** The kinds of `eth_subscribe` by name, with the names web3.js 1.x also sends. */
export const SUBSCRIPTION_ALIASES: Readonly<Record<string, SubscriptionKind>> = {
  newHeads: "newHeads",
  newBlockHeaders: "newHeads",
  logs: "logs",
  newPendingTransactions: "newPendingTransactions",
  pendingTransactions: "newPendingTransactions",
  syncing: "syncing",
};

/** Where a subscription's notifications go: one WebSocket connection. */
export interface NotificationSink {
  /** Sends one serialized notification; the sink enforces its own buffer limit. */
  notify(subscription: string, text: string): void;
}

export interface SubscriptionOptions {
  /** Subscriptions one connection may hold at once; past it `eth_subscribe` answers -32011. */
  readonly maxPerConnection: number;
}

export const DEFAULT_SUBSCRIPTION_OPTIONS: SubscriptionOptions = { maxPerConnection: 1000 };

type Subscription = SubscriptionRequest & { readonly sink: NotificationSink };

/**
 * The subscriptions of `eth_subscribe` over WebSocket. Follows the node's events and pushes
 * each kind's notification to the subscribed sinks: the header of every block that joins the
 * canonical chain, in chain order (a reorganization's new branch lowest first); the logs a
 * reorganization or rewind removed (`removed: true`), then those of the blocks that joined;
 * the hashes (or objects) of transactions the pool took in; sync state changes. A header or
 * transaction is serialized once for all its subscribers.
 */
export class SubscriptionManager {
  readonly #opts: SubscriptionOptions;
  readonly #log: Logger;
  readonly #subs = new Map<string, Subscription>();
  readonly #perSink = new Map<NotificationSink, Set<string>>();
  readonly #counts = { newHeads: 0, logs: 0, newPendingTransactions: 0, syncing: 0 };
  readonly #unsubscribe: (() => void)[];
  /** Log notifications wait for receipts: this keeps them in head-change order. */
  #logFeed: Promise<void> = Promise.resolve();

  readonly #typedTransactionsFrom: bigint | null;

  /** `typedTransactionsFrom`: the network's first block with typed transactions (`baseFeePerGas`). */
  constructor(
    events: NodeEvents,
    logger: Logger,
    opts: Partial<SubscriptionOptions> = {},
    typedTransactionsFrom: bigint | null = null,
  ) {
    this.#typedTransactionsFrom = typedTransactionsFrom;
    this.#opts = { ...DEFAULT_SUBSCRIPTION_OPTIONS, ...opts };
    this.#log = logger;
    this.#unsubscribe = [
      events.onHeadChange((change) => this.#onHeadChange(change)),
      events.onNewTransaction((tx) => this.#onNewTransaction(tx)),
    ];
    if (events.onSyncingChange !== undefined)
      this.#unsubscribe.push(events.onSyncingChange((status) => this.#onSyncing(status)));
  }

  get size(): number {
    return this.#subs.size;
  }

  /** A new subscription's id: `0x` and 16 random bytes, as the reference node makes them. */
  subscribe(sink: NotificationSink, request: SubscriptionRequest): string {
    let ids = this.#perSink.get(sink);
    if (ids !== undefined && ids.size >= this.#opts.maxPerConnection) {
      throw new RPCError(
        RPCErrorCode.LIMIT_EXCEEDED,
        `too many subscriptions: a connection holds at most ${this.#opts.maxPerConnection}; end unused ones with eth_unsubscribe`,
      );
    }
    let id: string;
    do id = bytesToHex(randomBytes(16));
    while (this.#subs.has(id));
    this.#subs.set(id, { ...request, sink });
    if (ids === undefined) {
      ids = new Set();
      this.#perSink.set(sink, ids);
    }
    ids.add(id);
    this.#counts[request.kind]++;
    return id;
  }

  /** `true` when `id` was a subscription of this sink. */
  unsubscribe(sink: NotificationSink, id: string): boolean {
    const sub = this.#subs.get(id);
    if (sub === undefined || sub.sink !== sink) return false;
    this.#drop(id, sub);
    return true;
  }

  /** Ends every subscription of a sink (its connection closed). */
  closeSink(sink: NotificationSink): void {
    const ids = this.#perSink.get(sink);
    if (ids === undefined) return;
    for (const id of ids) {
      const sub = this.#subs.get(id);
      if (sub !== undefined) this.#drop(id, sub);
    }
    this.#perSink.delete(sink);
  }

  /** Stops following the node's events and ends every subscription. */
  close(): void {
    for (const stop of this.#unsubscribe) stop();
    this.#subs.clear();
    this.#perSink.clear();
    for (const kind of Object.keys(this.#counts) as SubscriptionKind[]) this.#counts[kind] = 0;
  }

  #drop(id: string, sub: Subscription): void {
    this.#subs.delete(id);
    this.#perSink.get(sub.sink)?.delete(id);
    this.#counts[sub.kind]--;
  }

  #onHeadChange(change: HeadChange): void {
    if (this.#counts.newHeads > 0) {
      for (const block of change.added) {
        const header = headerJson(block, this.#typedTransactionsFrom);
        for (const [id, sub] of this.#subs)
          if (sub.kind === "newHeads") this.#send(sub.sink, id, header);
      }
    }
    if (this.#counts.logs === 0) return;
    const logSubs: [string, Subscription & { kind: "logs" }][] = [];
    for (const [id, sub] of this.#subs) if (sub.kind === "logs") logSubs.push([id, sub]);
    this.#logFeed = this.#logFeed
      .then(() =>
        headChangeLogs(
          change,
          logSubs.map(([, sub]) => sub.query),
          (i, found, removed) => {
            const [id, sub] = logSubs[i]!;
            // Unsubscribed (or disconnected) while the receipts were read.
            if (this.#subs.get(id) === sub)
              this.#send(sub.sink, id, JSON.stringify(formatLog(found, removed)));
          },
        ),
      )
      .catch((err: unknown) => {
        this.#log.error("log subscriptions failed on a head change", {
          err: err instanceof Error ? (err.stack ?? err.message) : String(err),
        });
      });
  }

  #onNewTransaction(tx: SignedTransaction): void {
    if (this.#counts.newPendingTransactions === 0) return;
    let hash: string | undefined;
    let full: string | undefined;
    for (const [id, sub] of this.#subs) {
      if (sub.kind !== "newPendingTransactions") continue;
      if (sub.fullTransactions) {
        full ??= JSON.stringify(formatTransaction(tx, undefined, 0));
        this.#send(sub.sink, id, full);
      } else {
        hash ??= `"${bytesToHex(tx.hash)}"`;
        this.#send(sub.sink, id, hash);
      }
    }
  }

  #onSyncing(status: SyncStatus): void {
    if (this.#counts.syncing === 0) return;
    const text = JSON.stringify(syncingJson(status));
    for (const [id, sub] of this.#subs) if (sub.kind === "syncing") this.#send(sub.sink, id, text);
  }

  #send(sink: NotificationSink, id: string, result: string): void {
    sink.notify(id, notification(id, result));
  }
}

/** The `eth_subscription` message around a serialized result. */
export function notification(subscription: string, result: string): string {
  return `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${subscription}","result":${result}}}`;
}

/** A `newHeads` notification's result: the block object without its body. */
export function headerJson(
  block: StoredBlock,
  typedTransactionsFrom: bigint | null = null,
): string {
  const {
    transactions: _t,
    uncles: _u,
    size: _s,
    ...header
  } = formatBlock(block, false, typedTransactionsFrom);
  return JSON.stringify(header);
}

/** geth's `syncing` notification shape (the reference node's too). */
export function syncingJson(status: SyncStatus): Record<string, unknown> {
  if (status === false) return { syncing: false };
  return { syncing: true, status: syncStatusJson(status) };
}
