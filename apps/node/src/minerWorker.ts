import { parentPort } from "node:worker_threads";
import { grindNonce, syntheticCoinbase, syntheticHeader } from "@nodex/mergemining";

/**
 * A mining thread of `nodex mine`: grinds the work it was last given, over the extra-nonces
 * `start`, `start + step`, … of its own, and posts solutions and hash counts. New work replaces
 * the old between two chunks of nonces.
 */

export interface WorkMessage {
  readonly kind: "work";
  readonly id: number;
  readonly hashForMergedMining: Uint8Array;
  readonly target: Uint8Array;
  readonly bits: number;
  readonly extraNonceStart: bigint;
  readonly extraNonceStep: bigint;
}

export type WorkerMessage =
  | {
      readonly kind: "found";
      readonly id: number;
      readonly header: Uint8Array;
      readonly coinbase: Uint8Array;
    }
  | { readonly kind: "hashes"; readonly count: number };

/** Nonces between two looks at the message queue. */
const CHUNK = 1 << 16;

let current: WorkMessage | undefined;
let stopped = false;

parentPort?.on("message", (message: WorkMessage | { kind: "stop" }) => {
  if (message.kind === "stop") stopped = true;
  else current = message;
});

const yieldToMessages = () => new Promise<void>((resolve) => setImmediate(resolve));

async function loop(): Promise<void> {
  while (!stopped) {
    const work = current;
    if (work === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    let extraNonce = work.extraNonceStart;
    while (!stopped && current === work) {
      const coinbase = syntheticCoinbase(work.hashForMergedMining, extraNonce);
      const header = syntheticHeader(coinbase, Math.floor(Date.now() / 1000), work.bits);
      for (let from = 0; from < 2 ** 32 && current === work && !stopped; from += CHUNK) {
        const nonce = grindNonce(header, work.target, from, from + CHUNK);
        parentPort?.postMessage({
          kind: "hashes",
          count: nonce < 0 ? CHUNK : nonce - from + 1,
        } satisfies WorkerMessage);
        if (nonce >= 0) {
          new DataView(header.buffer, header.byteOffset).setUint32(76, nonce, true);
          parentPort?.postMessage({
            kind: "found",
            id: work.id,
            header,
            coinbase,
          } satisfies WorkerMessage);
          // Wait for the next work: this one is solved.
          while (current === work && !stopped) await new Promise((r) => setTimeout(r, 10));
          break;
        }
        await yieldToMessages();
      }
      extraNonce += work.extraNonceStep;
    }
  }
  process.exit(0);
}

void loop();
