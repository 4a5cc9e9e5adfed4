#!/usr/bin/env node
// Trace bench: debug_traceTransaction of one large transaction against Nodex (regtest), Hardhat's
// node, Anvil and Ganache, one node at a time, in one run. On each node: deploy Work.sol (with
// its Middle and Leaf), send one `run(...)` of about 1,000,000 gas (fresh SSTOREs, warm and cold
// SLOADs, a hashing loop with events, nested CALLs and STATICCALLs into frames whose memory
// grows), then trace it again and again, each trace a fresh HTTP connection: with the struct
// logger as the node serves it by default, with `disableMemory: true`, and with the
// callTracer. Checks every answer, prints ms per trace (median, p95), the answer's size and the
// ratio Nodex ÷ peer per tracer, and writes bench/results/trace-<timestamp>.json.
//
//   node bench/trace/run.mjs                          (from the repo root)
//   node bench/trace/run.mjs --traces 5 --only nodex,anvil
//
// See bench/trace/README.md for what it measures and how to read the output.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ACCOUNT0, compileContract, loadEthers, sign, waitMined } from "../lib/eth.mjs";
import { fmtInt, fmtMs, fmtRatio, log, table } from "../lib/format.mjs";
import { freePort, post, RPCClient } from "../lib/http.mjs";
import { cpuWindow } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import {
  anvilPeer,
  DEV_MNEMONIC,
  ganachePeer,
  hardhatPeer,
  launchServer,
  nodexServer,
} from "../lib/servers.mjs";
import { benchDir, ensureBenchDeps, ensureNodexBuilt, gitCommit, root } from "../lib/setup.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/trace/run.mjs [--traces N] [--writes N] [--reads N] [--rounds N] [--calls N] [--grow-bytes N] [--nodex-max-response-bytes N] [--only a,b] [--tracers a,b] [--build] [--list]

  --traces N                    measured traces per node and tracer, each a fresh HTTP request (default 10)
  --budget S                    stop measuring a node's tracer after S seconds, with at least 3 traces (default 60)
  --writes N                    fresh storage slots the transaction writes (default 24)
  --reads N                     SLOADs of those slots and as many unwritten ones (default 200)
  --rounds N                    keccak256 rounds, one event every 32 (default 250)
  --calls N                     Work → Middle → Leaf call chains, 2 fresh SSTOREs and one grown memory each (default 4)
  --grow-bytes N                memory grown in each Leaf.grow frame (default 1024)
  --nodex-max-response-bytes N  Nodex's --rpc-max-response-bytes (default 67108864, 64 MiB: the
                                struct logs with memory are larger than its default 10 MiB)
  --only a,b                    nodes: nodex, hardhat, anvil, ganache (default all)
  --tracers a,b                 struct, memory, nomemory, call (default all)
  --build                       run npm run build even if apps/node/dist/main.js exists
  --list                        print the node and tracer ids`;

const { values: args } = parseArgs({
  options: {
    traces: { type: "string", default: "10" },
    budget: { type: "string", default: "60" },
    writes: { type: "string", default: "24" },
    reads: { type: "string", default: "200" },
    rounds: { type: "string", default: "250" },
    calls: { type: "string", default: "4" },
    "grow-bytes": { type: "string", default: "1024" },
    "nodex-max-response-bytes": { type: "string", default: String(64 * 1024 * 1024) },
    only: { type: "string" },
    tracers: { type: "string" },
    build: { type: "boolean", default: false },
    list: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});

const positive = (name) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive integer\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
};

const opts = {
  traces: positive("traces"),
  budget: positive("budget"),
  writes: positive("writes"),
  reads: positive("reads"),
  rounds: positive("rounds"),
  calls: positive("calls"),
  growBytes: positive("grow-bytes"),
  nodexMaxResponseBytes: positive("nodex-max-response-bytes"),
};

/** The tracers measured: the params after the transaction hash. */
const TRACERS = [
  {
    id: "struct",
    label: "struct logger, each node's defaults",
    options: undefined,
    kind: "struct",
  },
  {
    id: "memory",
    label: "struct logger, enableMemory",
    // geth's option (Anvil follows it: no memory by default); Nodex, Hardhat and Ganache capture
    // memory anyway and ignore the key.
    options: { enableMemory: true },
    kind: "struct",
  },
  {
    id: "nomemory",
    label: "struct logger, disableMemory",
    options: { disableMemory: true },
    kind: "struct",
  },
  { id: "call", label: "callTracer", options: { tracer: "callTracer" }, kind: "call" },
];

/** Traces measured at least, whatever --budget says. */
const MIN_TRACES = 3;

const NODEX_MODULES = "eth,net,web3,rpc,evm,debug,trace";

function hardhatTracePeer() {
  // Hardhat's node from bench/trace/hardhat (Cancun, as Nodex runs; the project of compare.mjs).
  const peer = hardhatPeer();
  return {
    ...peer,
    prepare(port, tmp) {
      return { ...peer.prepare(port, tmp), cwd: join(here, "hardhat") };
    },
  };
}

function anvilTracePeer() {
  // --steps-tracing: without it Anvil answers debug_traceTransaction with `"structLogs":[]`.
  const peer = anvilPeer();
  return {
    ...peer,
    prepare(port, tmp) {
      const spec = peer.prepare(port, tmp);
      return { ...spec, args: [...spec.args, "--steps-tracing", "--hardfork", "cancun"] };
    },
  };
}

const SERVERS = [
  nodexServer({
    extraArgs: [
      "--rpc-modules",
      NODEX_MODULES,
      "--rpc-max-response-bytes",
      String(opts.nodexMaxResponseBytes),
    ],
  }),
  hardhatTracePeer(),
  anvilTracePeer(),
  // Ganache 7 runs Shanghai at most; the contract is compiled for Paris so all four run it.
  ganachePeer(["--wallet.mnemonic", DEV_MNEMONIC, "--chain.hardfork", "shanghai"]),
];

if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
if (args.list) {
  console.log(`nodes: ${SERVERS.map((s) => s.id).join(", ")}`);
  console.log(`tracers: ${TRACERS.map((t) => `${t.id} (${t.label})`).join(", ")}`);
  process.exit(0);
}

const pick = (list, flag, ids) => {
  if (!ids) return list;
  const wanted = ids.split(",").map((s) => s.trim());
  const unknown = wanted.filter((id) => !list.some((x) => x.id === id));
  if (unknown.length > 0) {
    process.stderr.write(`unknown ${flag} id(s): ${unknown.join(", ")}\n`);
    process.exit(2);
  }
  return list.filter((x) => wanted.includes(x.id));
};
const selected = pick(SERVERS, "--only", args.only);
const tracers = pick(TRACERS, "--tracers", args.tracers);

// ---------------------------------------------------------------------------------------------
// The contract

const GAS_DEPLOY = 3_000_000n;
const GAS_RUN = 2_000_000n;

function compileWork() {
  return compileContract(join(here, "Work.sol"), "Work");
}

// ---------------------------------------------------------------------------------------------
// One trace: a POST on a fresh connection, timed to the last byte of the answer (`post`)

const traceOnce = (port, body) => post(port, body, 600_000);

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// ---------------------------------------------------------------------------------------------
// Checks

/** What a struct-logger answer holds, for the checks and the report. */
function describeStruct(result, receipt) {
  if (!result || !Array.isArray(result.structLogs))
    throw new Error(`not a struct-logger answer: ${JSON.stringify(result).slice(0, 200)}`);
  const logs = result.structLogs;
  if (logs.length === 0) throw new Error("structLogs is empty");
  // Ganache leaves `failed` out.
  if (result.failed === true) throw new Error("failed: true");
  const gasUsed = Number(receipt.gasUsed);
  if (Number(result.gas) !== gasUsed)
    throw new Error(`gas ${result.gas}, the receipt's gasUsed ${gasUsed}`);
  let withMemory = 0;
  let withStorage = 0;
  let withStack = 0;
  let maxMemoryWords = 0;
  let maxDepth = 0;
  for (const l of logs) {
    // Ganache answers `memory: []` with disableMemory.
    if (Array.isArray(l.memory) && l.memory.length > 0) {
      withMemory++;
      maxMemoryWords = Math.max(maxMemoryWords, l.memory.length);
    }
    if (l.storage && typeof l.storage === "object") withStorage++;
    if (Array.isArray(l.stack)) withStack++;
    maxDepth = Math.max(maxDepth, l.depth);
  }
  return {
    steps: logs.length,
    stepsWithMemory: withMemory,
    stepsWithStack: withStack,
    stepsWithStorage: withStorage,
    maxMemoryWords,
    maxDepth,
    // op, pc and depth of every step: compared with Nodex's.
    // Ganache names KECCAK256 by its old name, SHA3.
    sequence: logs.map((l) => `${l.pc}:${l.op === "SHA3" ? "KECCAK256" : l.op}:${l.depth}`),
  };
}

function frames(frame, out = [], depth = 0) {
  out.push(`${frame.type}:${depth}:${(frame.to ?? "").toLowerCase()}`);
  for (const c of frame.calls ?? []) frames(c, out, depth + 1);
  return out;
}

function describeCall(result, receipt) {
  if (Array.isArray(result?.structLogs))
    throw ignored("ignores the tracer: answers with the struct logger");
  if (!result || typeof result.type !== "string")
    throw new Error(`not a callTracer answer: ${JSON.stringify(result).slice(0, 200)}`);
  if (BigInt(result.gasUsed) !== BigInt(receipt.gasUsed))
    throw new Error(
      `top-level gasUsed ${result.gasUsed}, the receipt's ${BigInt(receipt.gasUsed)}`,
    );
  const list = frames(result);
  return { frames: list.length, topGasUsed: Number(BigInt(result.gasUsed)), sequence: list };
}

/** A tracer or option the node does not honour: shown as "ignores it" rather than measured. */
function ignored(message) {
  const err = new Error(message);
  err.ignored = true;
  return err;
}

/** Differences from Nodex's answer (the reference), as short lines. */
function compareSequences(ref, own, what) {
  if (!ref) return [];
  const out = [];
  if (ref.length !== own.length) out.push(`${own.length} ${what}, Nodex ${ref.length}`);
  const n = Math.min(ref.length, own.length);
  for (let i = 0; i < n; i++) {
    if (ref[i] !== own[i]) {
      out.push(`first difference at ${what.replace(/s$/, "")} ${i}: ${own[i]}, Nodex ${ref[i]}`);
      break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Per node

let tmp;
let artifact;
let iface;
/** Nodex's step and frame sequences, the reference of the others'. */
const reference = {};

const cleanupSync = installCleanup(() => {
  if (tmp) {
    rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  }
});

async function sendAndWait(rpc, ctx, { to, data, gasLimit }) {
  const { raw, hash } = sign({
    chainId: ctx.chainId,
    nonce: ctx.nonce++,
    gasPrice: ctx.gasPrice,
    gasLimit,
    to,
    data,
  });
  const sent = await rpc.call("eth_sendRawTransaction", [raw]);
  if (sent.toLowerCase() !== hash.toLowerCase()) throw new Error(`sent ${sent}, signed ${hash}`);
  const receipt = await waitMined(rpc, hash, 30_000);
  if (!receipt) throw new Error(`${hash} was not mined`);
  if (receipt.status !== "0x1") throw new Error(`${hash} failed (status ${receipt.status})`);
  return receipt;
}

async function prepareTransaction(rpc, run) {
  const chainId = BigInt(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  const ctx = { chainId, gasPrice, nonce };
  const deployed = await sendAndWait(rpc, ctx, {
    to: null,
    data: artifact.bytecode,
    gasLimit: GAS_DEPLOY,
  });
  const data = iface.encodeFunctionData("run", [
    opts.writes,
    opts.reads,
    opts.rounds,
    opts.calls,
    opts.growBytes,
  ]);
  const receipt = await sendAndWait(rpc, ctx, {
    to: deployed.contractAddress,
    data,
    gasLimit: GAS_RUN,
  });
  run.transaction = {
    hash: receipt.transactionHash,
    block: Number(receipt.blockNumber),
    gasUsed: Number(receipt.gasUsed),
    logs: receipt.logs.length,
    contract: deployed.contractAddress,
    chainId: Number(chainId),
  };
  log(
    `  transaction ${receipt.transactionHash}: ${fmtInt(Number(receipt.gasUsed))} gas, ${receipt.logs.length} logs, block ${Number(receipt.blockNumber)}`,
  );
  return receipt;
}

async function measureTracer(port, pid, tracer, receipt, run) {
  const params = [receipt.transactionHash];
  if (tracer.options) params.push(tracer.options);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "debug_traceTransaction", params });

  // The first trace is checked in full and not counted (it also warms the node up).
  const first = await traceOnce(port, body);
  const text = first.body.toString("utf8");
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${first.status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (json.error) {
    const e = new Error(`${json.error.code} ${json.error.message}`);
    e.rpcError = json.error;
    throw e;
  }
  const described =
    tracer.kind === "struct"
      ? describeStruct(json.result, receipt)
      : describeCall(json.result, receipt);
  const { sequence, ...shape } = described;
  const differences = compareSequences(
    reference[tracer.kind],
    sequence,
    tracer.kind === "struct" ? "steps" : "frames",
  );
  if (run.server.kind === "nodex") reference[tracer.kind] ??= sequence;
  if (tracer.id === "nomemory" && shape.stepsWithMemory > 0)
    throw ignored(
      `ignores disableMemory: memory on ${fmtInt(shape.stepsWithMemory)} steps, ${fmtInt(first.body.length)} bytes`,
    );
  const digest = sha256(first.body);
  json = undefined;

  const times = [];
  const firstBytes = [];
  // Answers whose status or size differ from the checked one's; answers of the same size with
  // other bytes (Hardhat writes each step's storage slots in no fixed order).
  let mismatches = 0;
  let reordered = 0;
  const w = cpuWindow(pid);
  const t0 = Date.now();
  for (let i = 0; i < opts.traces; i++) {
    if (i >= MIN_TRACES && Date.now() - t0 > opts.budget * 1000) break;
    const r = await traceOnce(port, body);
    times.push(r.ms);
    firstBytes.push(r.firstByteMs);
    if (r.status !== 200 || r.body.length !== first.body.length) mismatches++;
    else if (sha256(r.body) !== digest) reordered++;
  }
  const cpu = w.end(times.length);
  const sorted = [...times].sort((a, b) => a - b);
  const m = {
    ...shape,
    bytes: first.body.length,
    firstMs: first.ms,
    medianMs: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    minMs: sorted[0],
    maxMs: sorted[sorted.length - 1],
    medianFirstByteMs: percentile(
      firstBytes.filter((x) => x !== null).sort((a, b) => a - b),
      50,
    ),
    traces: times.length,
    times,
    mismatches,
    reordered,
    differences,
    serverCPUMsPerTrace: cpu.serverCPU ? (cpu.serverCPU.seconds / times.length) * 1000 : null,
    serverCPUShare: cpu.serverCPU?.share ?? null,
    clientCPUShare: cpu.clientCPU.share,
    otherCPUShare: cpu.otherCPU?.share ?? null,
  };
  const what =
    tracer.kind === "struct" ? `${fmtInt(shape.steps)} steps` : `${fmtInt(shape.frames)} frames`;
  log(
    `  ${tracer.id.padEnd(8)} ${what}, ${fmtInt(m.bytes)} bytes: median ${fmtMs(m.medianMs)} ms, p95 ${fmtMs(m.p95Ms)} ms, first ${fmtMs(m.firstMs)} ms (${times.length} traces)` +
      (mismatches ? `, ${mismatches} answers differ from the first!` : "") +
      (differences.length ? `; vs Nodex: ${differences.join("; ")}` : ""),
  );
  return m;
}

async function benchNode(server, run) {
  const port = await freePort();
  const logFile = join(tmp, `${server.id}.log`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  const rpc = new RPCClient(port);
  try {
    if (!handle || run.skipped) return;
    let receipt;
    try {
      receipt = await prepareTransaction(rpc, run);
    } catch (err) {
      run.skipped = `set-up failed: ${err.message}`;
      log(`  ${run.skipped}`);
      return;
    }
    for (const tracer of tracers) {
      try {
        run.results[tracer.id] = await measureTracer(port, handle.pid, tracer, receipt, run);
      } catch (err) {
        run.results[tracer.id] = {
          failed: err.message,
          ...(err.ignored ? { ignored: true } : {}),
          ...(err.rpcError ? { rpcError: err.rpcError } : {}),
        };
        log(`  ${tracer.id.padEnd(8)} not measured: ${err.message.slice(0, 300)}`);
      }
    }
  } finally {
    rpc.close();
    await stopChild(handle);
  }
}

// ---------------------------------------------------------------------------------------------
// Output

const ok = (m) => (m && !m.failed ? m : undefined);

function printTracer(tracer, runs) {
  const nodex = ok(runs.find((r) => r.server.kind === "nodex")?.results[tracer.id]);
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results[tracer.id];
    const name = run.server.label;
    if (run.skipped || !m) {
      rows.push([name, run.version ?? "—", "—", "—", "—", "—", "—", "—"]);
      if (run.skipped) notes.push(`${name}: ${run.skipped.split("\n")[0]}`);
      continue;
    }
    if (m.failed) {
      rows.push([
        name,
        run.version ?? "—",
        m.ignored ? "ignores it" : "not served",
        "—",
        "—",
        "—",
        "—",
        "—",
      ]);
      notes.push(`${name}: ${m.failed.slice(0, 200)}`);
      continue;
    }
    rows.push([
      name,
      run.version ?? "—",
      fmtInt(tracer.kind === "struct" ? m.steps : m.frames),
      fmtInt(m.bytes),
      fmtMs(m.medianMs),
      fmtMs(m.p95Ms),
      m.serverCPUMsPerTrace === null ? "—" : fmtMs(m.serverCPUMsPerTrace),
      run.server.kind === "nodex" ? "1×" : fmtRatio(nodex?.medianMs, m.medianMs),
    ]);
    if (tracer.kind === "struct")
      notes.push(
        `${name}: memory on ${fmtInt(m.stepsWithMemory)} steps (at most ${m.maxMemoryWords} words), storage on ${fmtInt(m.stepsWithStorage)}, stack on ${fmtInt(m.stepsWithStack)}`,
      );
    for (const d of m.differences) notes.push(`${name}: ${d}`);
    if (m.mismatches)
      notes.push(`${name}: ${m.mismatches} answers differ in status or size from the checked one!`);
    if (m.reordered)
      notes.push(
        `${name}: ${m.reordered} answers of the same size as the checked one, in another byte order`,
      );
    if (m.traces < opts.traces)
      notes.push(`${name}: ${m.traces} traces (--budget ${opts.budget} s)`);
    if (m.otherCPUShare !== null && m.otherCPUShare > 0.15)
      notes.push(
        `${name}: other processes used ${Math.round(m.otherCPUShare * 100)}% of a core meanwhile (figures are noisy)`,
      );
  }
  log("");
  log(`debug_traceTransaction, ${tracer.label} (up to ${opts.traces} traces per node)`);
  log(
    table(
      [
        "node",
        "version",
        tracer.kind === "struct" ? "steps" : "frames",
        "bytes",
        "median ms",
        "p95 ms",
        "srv CPU ms",
        "Nodex ÷ this",
      ],
      rows,
      ["l", "l", "r", "r", "r", "r", "r", "r"],
    ),
  );
  for (const n of notes) log(`  - ${n}`);
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  ensureBenchDeps(["ethers", "solc"]);
  const ethers = await loadEthers();
  if (selected.some((s) => s.kind === "nodex")) ensureNodexBuilt(args.build);
  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-trace-"));
  artifact = compileWork();
  iface = new ethers.Interface(artifact.abi);
  const cpu = cpus();
  log(
    `Trace bench: ${selected.map((s) => s.id).join(", ")}; ${tracers.map((t) => t.id).join(", ")}; ${opts.traces} traces each; ` +
      `run(writes ${opts.writes}, reads ${opts.reads}, rounds ${opts.rounds}, calls ${opts.calls}, grow ${opts.growBytes} bytes)`,
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), ethers ${ethers.version}, Work.sol compiled with solc ${artifact.solc.split("+")[0]} (Paris)`,
  );
  const runs = selected.map((server) => ({
    server: { id: server.id, label: server.label, kind: server.kind },
    version: null,
    results: {},
  }));
  // Nodex first: its steps and frames are the reference of the others'.
  for (const [i, server] of selected.entries()) {
    log("");
    log(`[${server.id}] ${server.label}`);
    const s = Date.now();
    await benchNode(server, runs[i]);
    runs[i].seconds = (Date.now() - s) / 1000;
    log(`  (${fmtInt(runs[i].seconds)} s)`);
  }
  for (const tracer of tracers) printTracer(tracer, runs);

  const gas = runs.filter((r) => r.transaction).map((r) => r.transaction.gasUsed);
  if (new Set(gas).size > 1)
    log(
      `\nnote: the transaction's gas differs between nodes: ${runs
        .filter((r) => r.transaction)
        .map((r) => `${r.server.label} ${fmtInt(r.transaction.gasUsed)}`)
        .join(", ")}`,
    );

  const file = join(resultsDir, `trace-${stamp}.json`);
  const report = {
    bench: "trace",
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    options: { ...opts, tracers: tracers.map((t) => ({ id: t.id, options: t.options ?? null })) },
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cores: cpu.length,
      cpu: cpu[0]?.model ?? null,
    },
    commit: gitCommit() ?? null,
    contract: { source: "bench/trace/Work.sol", solc: artifact.solc, evmVersion: "paris" },
    runs,
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log("");
  log(`raw results: ${relative(root, file)} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}

main()
  .catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    cleanupSync();
  });
