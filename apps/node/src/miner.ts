import { Worker } from "node:worker_threads";
import { targetToCompact, txid } from "@nodex/mergemining";
import {
  bigintToBytesBE,
  bytesToHex,
  bytesToUnprefixedHex,
  hexToBytes,
  NodexError,
} from "@nodex/types";
import type { WorkerMessage, WorkMessage } from "./minerWorker.js";

/**
 * The reference CPU merged miner (`nodex mine`): asks a node for work (`mnr_getWork`), has its
 * threads mine a Bitcoin block whose coinbase carries `RSKBLOCK:` + the block's
 * hashForMergedMining, and submits the header, coinbase and Merkle branch
 * (`mnr_submitBitcoinBlockPartialMerkle`), as merge-mining pool software does. The Bitcoin block
 * is a minimal one of its own (no Bitcoin network behind it): its proof of work counts only for
 * the Nodex chain.
 */

export const MineCommandErrorCode = {
  /** The node answered a JSON-RPC call with an error. */
  RPC_ERROR: "MINE_COMMAND_RPC_ERROR",
} as const;
export type MineCommandErrorCode = (typeof MineCommandErrorCode)[keyof typeof MineCommandErrorCode];

/** A call to the node that failed; the message reads `<method>: <node's message> (<code>)`. */
export class MineCommandError extends NodexError<MineCommandErrorCode> {
  constructor(code: MineCommandErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "MineCommandError";
  }
}

export interface MinerOptions {
  /** The node's JSON-RPC URL (with the API key path when it has one). */
  readonly rpc: string;
  readonly threads: number;
  /** Stop after this many blocks were accepted; 0 for never. */
  readonly maxBlocks: number;
  /** How often to ask for new work, in milliseconds. */
  readonly pollMs: number;
  /** Where progress lines go. */
  readonly log: (line: string) => void;
  /** Abort to stop. */
  readonly signal: AbortSignal;
}

export interface MinerReport {
  readonly accepted: number;
  readonly refused: number;
  readonly hashes: number;
}

interface Work {
  readonly blockHashForMergedMining: string;
  readonly target: string;
  readonly parentBlockHash: string;
}

/** A hashrate report to the log and the node this often. */
const REPORT_MS = 10_000;

export async function runMiner(opts: MinerOptions): Promise<MinerReport> {
  const rpc = rpcClient(opts.rpc);
  const reporter = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
  const workers = Array.from(
    { length: opts.threads },
    () => new Worker(new URL("./minerWorker.js", import.meta.url)),
  );
  let accepted = 0;
  let refused = 0;
  let hashes = 0;
  let hashesSinceReport = 0;
  let lastReport = Date.now();
  let workId = 0;
  let current: { id: number; work: Work } | undefined;
  const solutions: { id: number; header: Uint8Array; coinbase: Uint8Array }[] = [];
  let wake: (() => void) | undefined;
  for (const worker of workers) {
    worker.on("message", (message: WorkerMessage) => {
      if (message.kind === "hashes") {
        hashes += message.count;
        hashesSinceReport += message.count;
      } else {
        solutions.push(message);
        wake?.();
      }
    });
    worker.on("error", (err) => opts.log(`mining thread failed: ${err.message}`));
  }
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
      opts.signal.addEventListener("abort", () => wake?.(), { once: true });
    });

  // Each run starts from its own random extra-nonce, so two miners never grind the same blocks.
  const base = BigInt(Math.floor(Math.random() * 2 ** 48)) << 16n;
  try {
    while (!opts.signal.aborted && (opts.maxBlocks === 0 || accepted < opts.maxBlocks)) {
      const solution = solutions.shift();
      if (solution !== undefined && solution.id === current?.id) {
        const result = await submit(rpc, solution, opts.log);
        if (result === "accepted") accepted++;
        else if (result === "refused") refused++;
        current = undefined; // fetch new work at once
        continue;
      }
      const work = (await rpc("mnr_getWork", [])) as Work;
      if (
        current === undefined ||
        current.work.blockHashForMergedMining !== work.blockHashForMergedMining
      ) {
        current = { id: ++workId, work };
        const hashForMergedMining = hexToBytes(work.blockHashForMergedMining);
        const target = hexToBytes(work.target);
        for (const [i, worker] of workers.entries()) {
          worker.postMessage({
            kind: "work",
            id: workId,
            hashForMergedMining,
            target,
            bits: targetToCompact(BigInt(work.target)),
            extraNonceStart: base + BigInt(i),
            extraNonceStep: BigInt(workers.length),
          } satisfies WorkMessage);
        }
      }
      if (Date.now() - lastReport >= REPORT_MS) {
        const rate = Math.round((hashesSinceReport * 1000) / (Date.now() - lastReport));
        opts.log(`hashrate ${rate} H/s (${workers.length} threads), ${accepted} blocks accepted`);
        await rpc("eth_submitHashrate", [
          bytesToHex(bigintToBytesBE(BigInt(rate), 32)),
          reporter,
        ]).catch(() => undefined);
        lastReport = Date.now();
        hashesSinceReport = 0;
      }
      if (solutions.length === 0) await sleep(opts.pollMs);
    }
  } finally {
    for (const worker of workers) worker.postMessage({ kind: "stop" });
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return { accepted, refused, hashes };
}

async function submit(
  rpc: RPC,
  solution: { header: Uint8Array; coinbase: Uint8Array },
  log: (line: string) => void,
): Promise<"accepted" | "refused" | "other"> {
  try {
    const info = (await rpc("mnr_submitBitcoinBlockPartialMerkle", [
      bytesToUnprefixedHex(new Uint8Array(32)),
      bytesToUnprefixedHex(solution.header),
      bytesToUnprefixedHex(solution.coinbase),
      bytesToUnprefixedHex(txid(solution.coinbase)),
      "1",
    ])) as { blockImportedResult: string; blockHash: string; blockIncludedHeight: string };
    const result = String.fromCharCode(...hexToBytes(info.blockImportedResult));
    log(`block ${BigInt(info.blockIncludedHeight)} ${info.blockHash}: ${result}`);
    return result === "IMPORTED_BEST" || result === "IMPORTED_NOT_BEST" ? "accepted" : "other";
  } catch (err) {
    log(`solution refused: ${(err as Error).message}`);
    return "refused";
  }
}

type RPC = (method: string, params: unknown[]) => Promise<unknown>;

/** A JSON-RPC client over fetch that throws the node's error message. */
function rpcClient(url: string): RPC {
  let id = 0;
  return async (method, params) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    const body = (await res.json()) as {
      result?: unknown;
      error?: { code: number; message: string };
    };
    if (body.error !== undefined) {
      throw new MineCommandError(
        MineCommandErrorCode.RPC_ERROR,
        `${method}: ${body.error.message} (${body.error.code})`,
        { method, rpcCode: body.error.code },
      );
    }
    return body.result;
  };
}
