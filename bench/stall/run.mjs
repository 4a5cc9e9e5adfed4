#!/usr/bin/env node
// Stall bench: how long a cheap request (eth_blockNumber) waits while heavy ones run. On each
// node: deploy a loop contract and run it once (about 2.8M gas), deploy an emitter and make
// 20,000 logs (10 transactions of 2,000); then eth_blockNumber one after another on one
// connection, first alone, then while 4 clients trace the loop transaction
// (debug_traceTransaction, one after another each) and 4 clients ask for the 20,000 logs
// (eth_getLogs). Prints eth_blockNumber's p50, p99 and max in both phases, how many heavy
// answers came meanwhile, and the ratios; writes bench/results/stall-<timestamp>.json.
//
//   node bench/stall/run.mjs                               (from the repo root)
//   node bench/stall/run.mjs --before /tmp/before          (also the build of another worktree)
//   node bench/stall/run.mjs --only nodex,anvil --seconds 10
//
// See bench/README.md (Stall) for what it measures and how to read the output.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { ACCOUNT0, word } from "../lib/eth.mjs";
import { fmtInt, fmtMs, fmtRatio, indent, log, readTail, table } from "../lib/format.mjs";
import { freePort, RPCClient } from "../lib/http.mjs";
import { cpuWindow, Latencies } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { anvilPeer, hardhatPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import { benchDir, ensureBenchDeps, ensureNodexBuilt, gitCommit, root } from "../lib/setup.mjs";

const USAGE = `usage: node bench/stall/run.mjs [--seconds S] [--traces N] [--log-queries N] [--rounds N] [--logs N] [--before DIR] [--only a,b] [--build]

  --seconds S       eth_blockNumber under load for S seconds per node (default 20)
  --traces N        clients tracing the loop transaction meanwhile (default 4)
  --log-queries N   clients asking for every log meanwhile (default 4)
  --rounds N        rounds of the traced loop, 40 gas each (default 70000: 2.8M gas)
  --logs N          logs made, 2,000 per transaction (default 20000)
  --before DIR      also measure the Nodex built in that worktree (id nodex-before)
  --only a,b        nodes: nodex, nodex-before, anvil, hardhat (default all)
  --build           run npm run build even if apps/node/dist/main.js exists`;

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "20" },
    traces: { type: "string", default: "4" },
    "log-queries": { type: "string", default: "4" },
    rounds: { type: "string", default: "70000" },
    logs: { type: "string", default: "20000" },
    before: { type: "string" },
    only: { type: "string" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const positive = (name, min = 1) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`--${name} must be an integer of at least ${min}\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
};
const LOGS_PER_TX = 2000;
const opts = {
  seconds: positive("seconds"),
  traces: positive("traces", 0),
  logQueries: positive("log-queries", 0),
  rounds: positive("rounds"),
  logs: positive("logs", LOGS_PER_TX),
};
const logTxs = Math.ceil(opts.logs / LOGS_PER_TX);

/** Runtime: n = calldata[0]; while (n != 0) n -= 1; stop. 40 gas and 10 steps a round. */
const LOOP = "0x6000355b8015601057600190036003565b00";
/** Runtime: n = calldata[0]; while (n != 0) { mstore(0, n); log1(0, 32, 0x2a); n -= 1 }; stop. */
const EMIT = "0x6000355b8015601b5780600052602a60206000a1600190036003565b00";
const deployCode = (runtime) => {
  const n = ((runtime.length - 2) / 2).toString(16).padStart(4, "0");
  return `0x61${n}80600c6000396000f3${runtime.slice(2)}`;
};

// Node's HTTP layer on both builds (the only one since e5f308b; builds before it chose
// uWebSockets.js on Node 20), so that --before compares the threads alone.
const NODEX_ARGS = [
  "--rpc-modules",
  "eth,net,web3,rpc,evm,debug,trace",
  "--rpc-http-layer",
  "node",
];

/**
 * Each node traces with the tracer it serves that answers small: Nodex and Anvil the
 * callTracer (Anvil without --steps-tracing, which its callTracer does not need); Hardhat serves
 * only the struct logger, asked for without stack, memory and storage.
 */
const CALL_TRACER = { tracer: "callTracer" };
const SERVERS = [
  { ...nodexServer({ extraArgs: NODEX_ARGS }), tracer: CALL_TRACER },
  ...(args.before
    ? [
        {
          ...nodexServer({
            id: "nodex-before",
            label: `Nodex (${relative(root, args.before) || args.before})`,
            extraArgs: NODEX_ARGS,
            home: args.before,
          }),
          tracer: CALL_TRACER,
        },
      ]
    : []),
  { ...anvilPeer(), tracer: CALL_TRACER },
  {
    ...hardhatPeer(),
    tracer: { disableStack: true, disableMemory: true, disableStorage: true },
  },
];

const selected = (() => {
  if (!args.only) return SERVERS;
  const wanted = args.only.split(",").map((s) => s.trim());
  const unknown = wanted.filter((id) => !SERVERS.some((s) => s.id === id));
  if (unknown.length > 0) {
    process.stderr.write(`unknown --only id(s): ${unknown.join(", ")}\n`);
    process.exit(2);
  }
  return SERVERS.filter((s) => wanted.includes(s.id));
})();

// ---------------------------------------------------------------------------------------------

async function send(rpc, tx) {
  const hash = await rpc.call("eth_sendTransaction", [{ from: ACCOUNT0, ...tx }]);
  for (let i = 0; i < 2000; i++) {
    const receipt = await rpc.call("eth_getTransactionReceipt", [hash]);
    if (receipt) {
      if (receipt.status !== "0x1") throw new Error(`transaction ${hash} failed`);
      return { hash, receipt };
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`transaction ${hash} was not mined`);
}

/** Deploys the contracts and makes the traced transaction and the logs. */
async function prepare(port) {
  const rpc = new RPCClient(port);
  try {
    const loop = (await send(rpc, { data: deployCode(LOOP), gas: "0x100000" })).receipt
      .contractAddress;
    const gas = `0x${(opts.rounds * 40 + 100_000).toString(16)}`;
    const traced = await send(rpc, { to: loop, data: word(opts.rounds), gas });
    const emit = (await send(rpc, { data: deployCode(EMIT), gas: "0x100000" })).receipt
      .contractAddress;
    const blocks = [];
    for (let i = 0; i < logTxs; i++) {
      const { receipt } = await send(rpc, {
        to: emit,
        data: word(LOGS_PER_TX),
        gas: "0x2dc6c0",
      });
      blocks.push(receipt.blockNumber);
    }
    return {
      txHash: traced.hash,
      gasUsed: BigInt(traced.receipt.gasUsed),
      fromBlock: blocks[0],
      toBlock: blocks.at(-1),
    };
  } finally {
    rpc.close();
  }
}

/** eth_blockNumber one after another on one connection until `until()`; each answer checked. */
async function probe(port, until, latencies) {
  const rpc = new RPCClient(port);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });
  try {
    while (!until()) {
      const t0 = performance.now();
      const { status, text } = await rpc.raw(body, 600_000);
      latencies.push(performance.now() - t0);
      if (status !== 200 || !/"result":"0x[0-9a-f]+"/.test(text))
        throw new Error(`eth_blockNumber: HTTP ${status}: ${text.slice(0, 200)}`);
    }
  } finally {
    rpc.close();
  }
}

async function measureNode(server, tmp) {
  const run = { id: server.id, label: server.label };
  const port = await freePort();
  const logFile = join(tmp, `${server.id}.log`);
  log(`${server.label}:`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  if (!handle || run.skipped) {
    await stopChild(handle);
    return run;
  }
  try {
    const work = await prepare(port);
    run.tracedGas = Number(work.gasUsed);
    const idle = new Latencies();
    const idleEnd = performance.now() + 3000;
    await probe(port, () => performance.now() > idleEnd, idle);
    run.idle = idle.summary();
    // The heavy clients run on a thread of their own (load.mjs): parsing their answers (8 MB
    // for 20,000 logs) here would hold up the probe's own event loop.
    const load = new Worker(new URL("./load.mjs", import.meta.url), {
      workerData: {
        port,
        traces: opts.traces,
        logQueries: opts.logQueries,
        txHash: work.txHash,
        gasUsed: String(work.gasUsed),
        tracer: server.tracer,
        fromBlock: work.fromBlock,
        toBlock: work.toBlock,
        logs: logTxs * LOGS_PER_TX,
      },
    });
    let stop = false;
    const finished = new Promise((resolve, reject) => {
      load.on("message", (m) => {
        if (m.kind === "done") resolve(m.counts);
        if (m.kind === "failed") {
          stop = true;
          reject(new Error(m.message));
        }
      });
      load.on("error", (err) => {
        stop = true;
        reject(err);
      });
    });
    finished.catch(() => {});
    await new Promise((resolve) => load.once("message", resolve));
    const loaded = new Latencies();
    const cpu = cpuWindow(handle.pid);
    const end = performance.now() + opts.seconds * 1000;
    await probe(port, () => stop || performance.now() > end, loaded);
    run.cpu = cpu.end(loaded.summary().count);
    load.postMessage("stop");
    let counts;
    try {
      counts = await finished;
    } finally {
      await load.terminate();
    }
    run.loaded = loaded.summary();
    run.heavy = { traces: counts.traces, logQueries: counts.logQueries, seconds: opts.seconds };
    log(
      `  eth_blockNumber alone p50 ${fmtMs(run.idle.p50)} ms, p99 ${fmtMs(run.idle.p99)} ms; under load p50 ${fmtMs(run.loaded.p50)} ms, p99 ${fmtMs(run.loaded.p99)} ms, max ${fmtMs(run.loaded.max)} ms (${run.loaded.count} answers); ${counts.traces} traces and ${counts.logQueries} log queries answered meanwhile`,
    );
  } catch (err) {
    run.error = err.message;
    run.logTail = readTail(logFile, 12);
    log(`  failed: ${err.message}${run.logTail ? `\n${indent(run.logTail, "      | ")}` : ""}`);
  } finally {
    await stopChild(handle);
  }
  return run;
}

// ---------------------------------------------------------------------------------------------

installCleanup();
ensureBenchDeps(["hardhat", "@foundry-rs/anvil"]);
if (selected.some((s) => s.id === "nodex")) ensureNodexBuilt(args.build);
const tmp = mkdtempSync(join(tmpdir(), "nodex-bench-stall-"));
const runs = [];
const started = new Date();
try {
  log(
    `Stall bench: ${opts.traces} traces of ${opts.rounds} loop rounds and ${opts.logQueries} queries of ${logTxs * LOGS_PER_TX} logs at once, eth_blockNumber for ${opts.seconds} s; ${cpus().length} cores, Node ${process.versions.node}`,
  );
  for (const server of selected) runs.push(await measureNode(server, tmp));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

/** Nodex ÷ this, as `1/N×` when Nodex is more than ten times lower (fmtRatio would say 0.00×). */
const ratio = (a, b) =>
  a && b && a / b < 0.1 ? `1/${fmtInt(Math.round(b / a))}×` : fmtRatio(a, b);

const measured = runs.filter((r) => r.loaded);
const nodex = runs.find((r) => r.id === "nodex" && r.loaded);
const rows = measured.map((r) => [
  r.label,
  fmtMs(r.idle.p50),
  fmtMs(r.idle.p99),
  fmtMs(r.loaded.p50),
  fmtMs(r.loaded.p99),
  fmtMs(r.loaded.max),
  fmtInt(r.loaded.count),
  fmtInt(r.heavy.traces),
  fmtInt(r.heavy.logQueries),
  r === nodex || !nodex ? "—" : ratio(nodex.loaded.p50, r.loaded.p50),
  r === nodex || !nodex ? "—" : ratio(nodex.loaded.p99, r.loaded.p99),
]);
log("");
log(
  table(
    [
      "node",
      "alone p50",
      "alone p99",
      "loaded p50",
      "loaded p99",
      "loaded max",
      "answers",
      "traces",
      "log queries",
      "Nodex ÷ this p50",
      "Nodex ÷ this p99",
    ],
    rows,
    ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
  ),
);
log(
  "(ms; answers: eth_blockNumber answers under load; traces, log queries: heavy answers meanwhile)",
);
for (const r of runs) if (!r.loaded) log(`${r.label}: ${r.skipped ?? r.error ?? "not measured"}`);

const outDir = join(benchDir, "results");
mkdirSync(outDir, { recursive: true });
const file = join(outDir, `stall-${started.toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  JSON.stringify(
    { started, commit: gitCommit(root), node: process.versions.node, opts, runs },
    null,
    2,
  ),
);
log(`results: ${relative(root, file)}`);
if (runs.some((r) => r.error)) process.exitCode = 1;
