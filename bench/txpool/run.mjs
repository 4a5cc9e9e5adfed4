#!/usr/bin/env node
// Transaction-pool bench: admissions per second of signed transfers from 100 senders (in nonce
// order, and each sender's in reverse so that all wait queued until the last fills the gap),
// pending() for a full block's worth of transfers and for the whole pool, and onNewHead after a
// block. Plain node, in-process, on the built packages/txpool (no peers, no HTTP).
//
//   node bench/txpool/run.mjs                 (from the repo root)
//   node bench/txpool/run.mjs --per-sender 40 --rounds 5 --build
//
// See bench/README.md, section bench/txpool.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fmtInt, log, table } from "../lib/format.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dist = join(root, "packages/txpool/dist/index.js");
const typesDist = join(root, "packages/types/dist/index.js");

const USAGE = `usage: node bench/txpool/run.mjs [--senders N] [--per-sender K] [--rounds R] [--build]

  --senders N      senders (default 100)
  --per-sender K   transfers signed per sender before timing (default 20)
  --rounds R       rounds; each figure is the median (default 3)
  --build          rebuild packages/txpool first (tsc -b)`;

const { values: opts } = parseArgs({
  options: {
    senders: { type: "string", default: "100" },
    "per-sender": { type: "string", default: "20" },
    rounds: { type: "string", default: "3" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (opts.help) {
  log(USAGE);
  process.exit(0);
}
const SENDERS = Number(opts.senders);
const PER_SENDER = Number(opts["per-sender"]);
const rounds = Number(opts.rounds);
if (![SENDERS, PER_SENDER, rounds].every((n) => Number.isInteger(n) && n > 0) || PER_SENDER > 64) {
  log(USAGE);
  log("(--per-sender at most 64: the nonce window of the default accountQueue)");
  process.exit(2);
}

if (opts.build || !existsSync(dist) || !existsSync(typesDist)) {
  log("building packages/txpool (npx tsc -b packages/txpool)");
  const r = spawnSync("npx", ["--no-install", "tsc", "-b", "packages/txpool"], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) process.exit(1);
}
const { TxPool } = await import(pathToFileURL(dist).href);
const { bytesToHex, keccak256, signTransaction } = await import(pathToFileURL(typesDist).href);

const CHAIN_ID = 33;
const BLOCK_GAS_LIMIT = 6_800_000n;
const TRANSFER_GAS = 21_000n;
const BLOCK_TXS = Number(BLOCK_GAS_LIMIT / TRANSFER_GAS); // 323 transfers fill a block

class MemState {
  nonces = new Map();
  balances = new Map();
  async getNonce(a) {
    return this.nonces.get(bytesToHex(a)) ?? 0n;
  }
  async getBalance(a) {
    return this.balances.get(bytesToHex(a)) ?? 0n;
  }
}

// Sign everything before timing.
log(
  `bench/txpool: ${SENDERS} senders × ${PER_SENDER} transfers, ${rounds} round(s); node ${process.version}; ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"})`,
);
const t0 = performance.now();
const to = new Uint8Array(20).fill(0xaa);
const bySender = [];
const state = new MemState();
for (let s = 0; s < SENDERS; s++) {
  const key = keccak256(new TextEncoder().encode(`txpool bench ${s}`));
  const txs = [];
  for (let n = 0; n < PER_SENDER; n++) {
    // Prices vary by sender and nonce so that ordering has work to do.
    const gasPrice = 1_000_000_000n + BigInt((s * 7919 + n * 104_729) % 1000);
    txs.push(
      signTransaction(
        {
          nonce: BigInt(n),
          gasPrice,
          gasLimit: TRANSFER_GAS,
          to,
          value: 1n,
          data: new Uint8Array(),
        },
        key,
        CHAIN_ID,
      ),
    );
  }
  state.balances.set(bytesToHex(txs[0].from), 10n ** 24n);
  bySender.push(txs);
}
log(
  `signed ${SENDERS * PER_SENDER} transfers in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

const head = { number: 1n, gasLimit: BLOCK_GAS_LIMIT, minimumGasPrice: 1n, state };
// Round-robin over senders, each sender's in nonce order (how wallets send).
const inOrder = [];
for (let n = 0; n < PER_SENDER; n++) for (let s = 0; s < SENDERS; s++) inOrder.push(bySender[s][n]);
// Each sender's in reverse nonce order: all queued until nonce 0 promotes the sender's run.
const reversed = [];
for (let n = PER_SENDER - 1; n >= 0; n--)
  for (let s = 0; s < SENDERS; s++) reversed.push(bySender[s][n]);
const total = inOrder.length;
const poolOptions = { chainId: CHAIN_ID, globalSlots: total, globalQueue: total };

async function admissions(txs) {
  const pool = new TxPool(poolOptions);
  const start = performance.now();
  for (const tx of txs) await pool.add(tx, head);
  const ms = performance.now() - start;
  if (pool.status().pending !== txs.length) throw new Error("not all pending");
  return (txs.length * 1000) / ms;
}

/** pending() on a pool holding `txs`: microseconds per call (median of a batch of calls). */
async function pendingTime(txs) {
  const pool = new TxPool(poolOptions);
  for (const tx of txs) await pool.add(tx, head);
  let sink = 0;
  const times = [];
  for (let i = 0; i < 200; i++) {
    const start = performance.now();
    sink += pool.pending().length;
    times.push((performance.now() - start) * 1000);
  }
  if (sink !== 200 * txs.length) throw new Error("pending() lost transactions");
  return median(times);
}

/** onNewHead after a block that mined a block's worth: milliseconds. */
async function newHeadTime() {
  const pool = new TxPool(poolOptions);
  const s2 = new MemState();
  s2.balances = new Map(state.balances);
  const h2 = { ...head, state: s2 };
  for (const tx of inOrder) await pool.add(tx, h2);
  const mined = pool.pending().slice(0, BLOCK_TXS);
  for (const tx of mined) {
    const k = bytesToHex(tx.from);
    const n = s2.nonces.get(k) ?? 0n;
    if (tx.nonce + 1n > n) s2.nonces.set(k, tx.nonce + 1n);
  }
  const start = performance.now();
  pool.remove(mined.map((t) => t.hash));
  await pool.onNewHead({ ...h2, number: 2n });
  const ms = performance.now() - start;
  if (pool.status().pending !== total - BLOCK_TXS) throw new Error("onNewHead lost transactions");
  return ms;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

const blockTxs = inOrder.slice(0, Math.min(BLOCK_TXS, total));
const workloads = [
  {
    label: `add(): ${total} transfers, ${SENDERS} senders, in nonce order`,
    unit: "tx/s",
    run: () => admissions(inOrder),
    fmt: fmtInt,
  },
  {
    label: `add(): the same, each sender's in reverse (queued, then promoted)`,
    unit: "tx/s",
    run: () => admissions(reversed),
    fmt: fmtInt,
  },
  {
    label: `pending(): a block's worth (${blockTxs.length} transfers of 21,000 gas in ${BLOCK_GAS_LIMIT})`,
    unit: "µs/call",
    run: () => pendingTime(blockTxs),
    fmt: (x) => x.toFixed(0),
  },
  {
    label: `pending(): the whole pool (${total})`,
    unit: "µs/call",
    run: () => pendingTime(inOrder),
    fmt: (x) => x.toFixed(0),
  },
  {
    label: `remove() + onNewHead(): a block's worth mined, ${SENDERS} senders re-read`,
    unit: "ms",
    run: () => newHeadTime(),
    fmt: (x) => x.toFixed(2),
  },
];

const results = workloads.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < workloads.length; i++) results[i].push(await workloads[i].run());
}
log("");
log(
  table(
    ["workload", "median", "unit", "rounds"],
    workloads.map((w, i) => [
      w.label,
      w.fmt(median(results[i])),
      w.unit,
      results[i].map(w.fmt).join(" / "),
    ]),
    ["l", "r", "l", "l"],
  ),
);
