#!/usr/bin/env node
// Merged-mining bench: proof verifications per second (the reference's block 0x1b4 proof), and
// double-SHA256 of an 80-byte Bitcoin header per second with @noble/hashes, node:crypto and the
// grinding loop of @nodex/mergemining (midstate of the first 64 bytes, two compressions per
// nonce), plus synthetic proofs at regtest difficulties. Plain node, on the built package.
//
//   node bench/mergemining/run.mjs                 (from the repo root)
//   node bench/mergemining/run.mjs --seconds 3 --rounds 3 --build
//
// See bench/README.md, section bench/mergemining.
import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fmtInt, log, table } from "../lib/format.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(root, "packages/mergemining");
const dist = join(pkg, "dist/index.js");

const USAGE = `usage: node bench/mergemining/run.mjs [--seconds S] [--rounds R] [--build]

  --seconds S   seconds measured per workload and round (default 1)
  --rounds R    rounds; each figure is the median (default 3)
  --build       rebuild packages/mergemining first (tsc -b)`;

const { values: opts } = parseArgs({
  options: {
    seconds: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (opts.help) {
  log(USAGE);
  process.exit(0);
}
const seconds = Number(opts.seconds);
const rounds = Number(opts.rounds);
if (!(seconds > 0) || !(Number.isInteger(rounds) && rounds > 0)) {
  log(USAGE);
  process.exit(2);
}

if (opts.build || !existsSync(dist)) {
  log("building packages/mergemining (npx tsc -b packages/mergemining)");
  const r = spawnSync("npx", ["--no-install", "tsc", "-b", "packages/mergemining"], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) process.exit(1);
}
const mm = await import(pathToFileURL(dist).href);
// The @noble/hashes the package depends on (bench/node_modules may hold an older one).
const nobleSha2 = [
  join(pkg, "node_modules/@noble/hashes/sha2.js"),
  join(root, "node_modules/@noble/hashes/sha2.js"),
].find((p) => existsSync(p));
if (!nobleSha2) throw new Error("@noble/hashes not installed: run npm install at the repo root");
const { sha256 } = await import(pathToFileURL(nobleSha2).href);

const hex = (s) => Uint8Array.from(Buffer.from(s.replace(/^0x/, ""), "hex"));
const v = JSON.parse(readFileSync(join(pkg, "test/vectors/rsk-block-0x1b4.json"), "utf8"))
  .BlockExampleResultTransactionHash.value;
const proof = {
  hashForMergedMining: hex(v.hashForMergedMining),
  difficulty: BigInt(v.difficulty),
  bitcoinHeader: hex(v.bitcoinMergedMiningHeader),
  coinbase: hex(v.bitcoinMergedMiningCoinbaseTransaction),
  merkleProof: hex(v.bitcoinMergedMiningMerkleProof),
};
if (!mm.verifyMergedMiningProof(proof).ok) throw new Error("the 0x1b4 proof does not verify");
const header = proof.bitcoinHeader;

/** Runs `batch()` (which does `n` operations) for `seconds`; operations per second. */
function rate(batch, n) {
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let ops = 0;
  let now = t0;
  while (now < end) {
    batch();
    ops += n;
    now = performance.now();
  }
  return (ops * 1000) / (now - t0);
}

// Each double-SHA256 workload hashes the header with a changing nonce, as grinding does.
const h1 = Uint8Array.from(header);
const view1 = new DataView(h1.buffer);
let nonce = 0;
let sink = 0;
const BATCH = 2000;
const impossible = new Uint8Array(32); // no hash meets a zero target: grindNonce runs the whole range

const workloads = [
  {
    id: "verify",
    label: "verifyMergedMiningProof (block 0x1b4: 7-step proof)",
    unit: "proofs/s",
    run: () =>
      rate(() => {
        for (let i = 0; i < 100; i++) sink ^= mm.verifyMergedMiningProof(proof).ok ? 1 : 0;
      }, 100),
  },
  {
    id: "noble",
    label: "double-SHA256 of 80 bytes: @noble/hashes sha256(sha256(h))",
    unit: "hashes/s",
    run: () =>
      rate(() => {
        for (let i = 0; i < BATCH; i++) {
          view1.setUint32(76, nonce++, true);
          sink ^= sha256(sha256(h1))[0];
        }
      }, BATCH),
  },
  {
    id: "createHash",
    label: "double-SHA256 of 80 bytes: node:crypto createHash ×2",
    unit: "hashes/s",
    run: () =>
      rate(() => {
        for (let i = 0; i < BATCH; i++) {
          view1.setUint32(76, nonce++, true);
          const a = crypto.createHash("sha256").update(h1).digest();
          sink ^= crypto.createHash("sha256").update(a).digest()[0];
        }
      }, BATCH),
  },
  ...(typeof crypto.hash === "function"
    ? [
        {
          id: "cryptoHash",
          label: "double-SHA256 of 80 bytes: node:crypto hash() ×2 (one-shot)",
          unit: "hashes/s",
          run: () =>
            rate(() => {
              for (let i = 0; i < BATCH; i++) {
                view1.setUint32(76, nonce++, true);
                const a = crypto.hash("sha256", h1, "buffer");
                sink ^= crypto.hash("sha256", a, "buffer")[0];
              }
            }, BATCH),
        },
      ]
    : []),
  {
    id: "grind",
    label: "double-SHA256 of 80 bytes: grindNonce (midstate + 2 compressions)",
    unit: "hashes/s",
    run: () => {
      const n = 20_000;
      return rate(() => {
        const from = nonce % (2 ** 32 - n);
        nonce += n;
        sink ^= mm.grindNonce(header, impossible, from, from + n);
      }, n);
    },
  },
  {
    id: "synthetic",
    label: "buildSyntheticProof at difficulty 1,000 (regtest-like)",
    unit: "proofs/s",
    run: () => {
      let t = 1_700_000_000;
      return rate(() => {
        const p = mm.buildSyntheticProof({
          hashForMergedMining: proof.hashForMergedMining,
          difficulty: 1000n,
          time: t++,
        });
        sink ^= p.nonce;
      }, 1);
    },
  },
];

log(
  `bench/mergemining: ${rounds} round(s) × ${seconds} s per workload; node ${process.version}; ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"})`,
);
const results = new Map(workloads.map((w) => [w.id, []]));
for (let r = 0; r < rounds; r++) {
  for (const w of workloads) results.get(w.id).push(w.run());
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
const rows = workloads.map((w) => {
  const m = median(results.get(w.id));
  return [w.label, fmtInt(m), w.unit, `${(1e6 / m).toFixed(m > 1e5 ? 3 : 1)} µs`];
});
log("");
log(table(["workload", "median", "unit", "per op"], rows, ["l", "r", "l", "r"]));
const hashers = ["noble", "createHash", "cryptoHash", "grind"].filter((id) => results.has(id));
const best = hashers.reduce((a, b) => (median(results.get(a)) >= median(results.get(b)) ? a : b));
log("");
log(`fastest double-SHA256 of a header: ${best} (checksum ${sink & 1})`);
