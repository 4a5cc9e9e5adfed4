import { parentPort, workerData } from "node:worker_threads";
import { Chain, ChainReader } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { encodeHeavyFailure, type HeavyRequest, serveHeavyRequest } from "@nodex/rpc";
import { Database } from "@nodex/state";
import {
  type Address,
  type NetworkPreset,
  nullLogger,
  type SignatureRecoveryPreference,
  selectSignatureRecovery,
} from "@nodex/types";
import { enableFastPaths } from "./fastPaths.js";

/**
 * A worker thread of the node's heavy requests (`heavyPool.ts`): it opens the node's database
 * (shared with the main thread, classic-level's `multithreading`), reads the chain in it without
 * writing, and serves one request at a time, each on the head the main thread names.
 */

export interface HeavyWorkerData {
  /** The database directory (`<datadir>/db`), already open on the main thread. */
  readonly dbPath: string;
  readonly network: NetworkPreset;
  readonly stateWindow: number | undefined;
  readonly caches: {
    readonly blocks: number;
    readonly headers: number;
    readonly receipts: number;
    readonly trieNodes: number;
    readonly states: number;
  };
  readonly signatureRecovery: SignatureRecoveryPreference;
}

/** From the main thread. */
export type ToHeavyWorker = {
  readonly kind: "request";
  readonly id: number;
  /** The head the request sees (landed in the database before the request was posted). */
  readonly head: Uint8Array;
  /** Canonical numbers changed by reorganizations since the last request. */
  readonly changed: readonly bigint[];
  /** The main thread's coinbase: that of the block a traced call runs in. */
  readonly coinbase: Address;
  readonly request: HeavyRequest;
};

/** To the main thread. */
export type FromHeavyWorker =
  | { readonly kind: "ready" }
  | { readonly kind: "result"; readonly id: number; readonly text: string | Uint8Array }
  | {
      readonly kind: "failure";
      readonly id: number;
      readonly failure: ReturnType<typeof encodeHeavyFailure>;
    };

const data = workerData as HeavyWorkerData;
const port = parentPort!;
enableFastPaths();

async function start(): Promise<void> {
  selectSignatureRecovery(data.signatureRecovery);
  const db = await Database.open(data.dbPath, { multithreading: true });
  const executor = new Executor(data.network);
  const chain = await Chain.openReadOnly(data.network, {
    db,
    executor,
    logger: nullLogger,
    ...(data.stateWindow === undefined ? {} : { stateWindow: data.stateWindow }),
    caches: {
      blocks: data.caches.blocks,
      headers: data.caches.headers,
      receipts: data.caches.receipts,
    },
    trieNodeCache: data.caches.trieNodes,
  });
  // The coinbase of a traced call's block (`debug_traceCall`) is the main thread's, told with
  // each request.
  let coinbase = new Uint8Array(20) as Address;
  const reader = new ChainReader(chain, executor, {
    coinbase: () => coinbase,
    stateCache: data.caches.states,
  });
  const deps = { reader, tracing: reader };
  // One request at a time, in the order posted: the main thread posts the next once this one
  // is answered.
  port.on("message", (message: ToHeavyWorker) => {
    void (async () => {
      try {
        await chain.follow(message.head, message.changed);
        coinbase = message.coinbase;
        const text = await serveHeavyRequest(deps, message.request);
        // Bytes are moved, not copied (their buffer is theirs alone).
        port.postMessage(
          { kind: "result", id: message.id, text } satisfies FromHeavyWorker,
          typeof text === "string" ? [] : [text.buffer as ArrayBuffer],
        );
      } catch (err) {
        port.postMessage({
          kind: "failure",
          id: message.id,
          failure: encodeHeavyFailure(err),
        } satisfies FromHeavyWorker);
      }
    })();
  });
  port.postMessage({ kind: "ready" } satisfies FromHeavyWorker);
}

// A failure to open is thrown out of the thread: the pool logs it and answers -32603.
start().catch((err: unknown) => {
  setImmediate(() => {
    throw err;
  });
});
