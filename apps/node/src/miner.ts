import {
  encodeBitcoinHeader,
  grindNonce,
  syntheticCoinbase,
  targetToCompact,
  txid,
} from "@nodex/mergemining";
import { bytesToHex, hexToBytes } from "@nodex/types";

/**
 * The reference CPU merged miner: asks a node for work (`mnr_getWork`), mines a Bitcoin block
 * whose coinbase carries the tag `RSKBLOCK:` + the block's hashForMergedMining, and submits it
 * (`mnr_submitBitcoinBlock`), as merge-mining pool software does. One thread; the Bitcoin
 * block is a minimal one of its own (no Bitcoin network behind it), so its proof of work counts
 * only for the Nodex chain.
 */

export interface MinerOptions {
  /** The node's JSON-RPC URL (with the API key path when it has one). */
  readonly rpc: string;
  /** Stop after this many blocks were accepted; 0 for never. */
  readonly maxBlocks: number;
  /** How often to ask for new work while grinding, in milliseconds. */
  readonly pollMs: number;
  /** Where progress lines go. */
  readonly log: (line: string) => void;
  /** Set to stop the loop. */
  readonly signal: AbortSignal;
}

export interface MinerReport {
  readonly accepted: number;
  readonly rejected: number;
  readonly hashes: number;
}

interface Work {
  readonly blockHashForMergedMining: string;
  readonly target: string;
  readonly parentBlockHash: string;
}

/** Nonces tried between two looks at the clock (about a tenth of a second). */
const CHUNK = 1 << 16;
/** A hashrate report to the node this often. */
const REPORT_MS = 10_000;

export async function runMiner(opts: MinerOptions): Promise<MinerReport> {
  const rpc = rpcClient(opts.rpc);
  const id = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
  let accepted = 0;
  let rejected = 0;
  let hashes = 0;
  let lastReport = Date.now();
  let hashesSinceReport = 0;
  let extraNonce = BigInt(Math.floor(Math.random() * 2 ** 32)) << 32n;
  while (!opts.signal.aborted && (opts.maxBlocks === 0 || accepted < opts.maxBlocks)) {
    const work = (await rpc("mnr_getWork", [])) as Work;
    const hfmm = hexToBytes(work.blockHashForMergedMining);
    const target = hexToBytes(work.target);
    const bits = targetToCompact(BigInt(work.target));
    const fetched = Date.now();
    let found: { header: Uint8Array; coinbase: Uint8Array } | undefined;
    // Grind this work until a solution, new work or a stop.
    while (found === undefined && !opts.signal.aborted && Date.now() - fetched < opts.pollMs) {
      const coinbase = syntheticCoinbase(hfmm, extraNonce);
      const header = encodeBitcoinHeader({
        version: 0x20000000,
        prevHash: new Uint8Array(32),
        merkleRoot: txid(coinbase),
        time: Math.floor(Date.now() / 1000),
        bits,
        nonce: 0,
      });
      for (let from = 0; from < 2 ** 32 && found === undefined; from += CHUNK) {
        const nonce = grindNonce(header, target, from, from + CHUNK);
        const tried = nonce < 0 ? CHUNK : nonce - from + 1;
        hashes += tried;
        hashesSinceReport += tried;
        if (nonce >= 0) {
          new DataView(header.buffer, header.byteOffset).setUint32(76, nonce, true);
          found = { header, coinbase };
        } else if (opts.signal.aborted || Date.now() - fetched >= opts.pollMs) {
          break;
        }
      }
      extraNonce++;
    }
    if (Date.now() - lastReport >= REPORT_MS) {
      const rate = Math.round((hashesSinceReport * 1000) / (Date.now() - lastReport));
      await rpc("eth_submitHashrate", [`0x${rate.toString(16).padStart(64, "0")}`, id]).catch(
        () => undefined,
      );
      opts.log(`hashrate ${rate} H/s`);
      lastReport = Date.now();
      hashesSinceReport = 0;
    }
    if (found === undefined) continue;
    const block = new Uint8Array(80 + 1 + found.coinbase.length);
    block.set(found.header, 0);
    block[80] = 1;
    block.set(found.coinbase, 81);
    try {
      const info = (await rpc("mnr_submitBitcoinBlock", [bytesToHex(block).slice(2)])) as {
        blockImportedResult: string;
        blockHash: string;
        blockIncludedHeight: string;
      };
      const result = Buffer.from(info.blockImportedResult.slice(2), "hex").toString("ascii");
      if (result === "IMPORTED_BEST" || result === "IMPORTED_NOT_BEST") accepted++;
      opts.log(
        `block ${BigInt(info.blockIncludedHeight)} ${info.blockHash}: ${result} (parent ${work.parentBlockHash})`,
      );
    } catch (err) {
      rejected++;
      opts.log(`solution refused: ${(err as Error).message}`);
    }
  }
  return { accepted, rejected, hashes };
}

/** A JSON-RPC client over fetch that throws the node's error message. */
function rpcClient(url: string): (method: string, params: unknown[]) => Promise<unknown> {
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
    if (body.error !== undefined)
      throw new Error(`${method}: ${body.error.message} (${body.error.code})`);
    return body.result;
  };
}
