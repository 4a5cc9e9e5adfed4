#!/usr/bin/env node
// RPC bench: the cheapest JSON-RPC method, eth_chainId, with autocannon, against
// bare node:http (baseline), candidate HTTP layers (fastify, uWebSockets.js), the peers
// (Ganache, Hardhat node, Anvil) and Nodex, one server at a time, in one run.
//
//   npm run bench                                 (from the repo root)
//   node bench/rpc/run.mjs --duration 5 --only node-http,nodex
//
// See bench/README.md for what it measures and how to read the output.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  firstLines,
  fmtInt,
  fmtK,
  fmtMs,
  fmtRatio,
  indent,
  log,
  readTail,
  table,
} from "../lib/format.mjs";
import { freePort, post } from "../lib/http.mjs";
import { loadAutocannon, measure } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { anvilPeer, ganachePeer, hardhatPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import {
  benchDir,
  ensureBenchDeps,
  ensureNodexBuilt,
  gitCommit,
  packageJSON,
  resolveOrSkip,
  root,
  Skip,
} from "../lib/setup.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const serversDir = join(here, "servers");

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/rpc/run.mjs [--duration S] [--connections N] [--warmup S] [--rounds R] [--only a,b] [--build] [--list]

  --duration S     seconds measured per server and workload (default 10)
  --connections N  concurrent keep-alive connections (default 50)
  --warmup S       seconds of unmeasured load before each measurement (default 2)
  --rounds R       go through all servers R times and report the median round (default 1)
  --only a,b       run only these servers (ids from --list); nodex is the ratio reference
  --build          run \`npm run build\` first even if apps/node/dist/main.js exists
  --list           print the server ids and exit
`;

let args;
try {
  args = parseArgs({
    options: {
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      warmup: { type: "string", default: "2" },
      rounds: { type: "string", default: "1" },
      only: { type: "string" },
      list: { type: "boolean", default: false },
      build: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  }).values;
} catch (err) {
  process.stderr.write(`${err.message}\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const opts = {
  duration: positiveNumber("--duration", args.duration),
  connections: positiveInteger("--connections", args.connections),
  warmup: nonNegativeNumber("--warmup", args.warmup),
  rounds: positiveInteger("--rounds", args.rounds),
};

function positiveNumber(flag, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    usage(`${flag} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}
function nonNegativeNumber(flag, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0)
    usage(`${flag} must be a number >= 0, got ${JSON.stringify(text)}`);
  return n;
}
function positiveInteger(flag, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    usage(`${flag} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}
function usage(message) {
  process.stderr.write(`${message}\n${USAGE}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Workloads

const SINGLE_BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
const BATCH_SIZE = 10;
const BATCH_BODY = JSON.stringify(
  Array.from({ length: BATCH_SIZE }, (_, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "eth_chainId",
    params: [],
  })),
);
const WORKLOADS = [
  { id: "single", title: "single eth_chainId request", body: SINGLE_BODY, calls: 1 },
  {
    id: "batch",
    title: `batch of ${BATCH_SIZE} eth_chainId requests`,
    body: BATCH_BODY,
    calls: BATCH_SIZE,
  },
];

// ---------------------------------------------------------------------------------------------
// Servers

function candidate(id, label, script, extraArgs = []) {
  return {
    id,
    label,
    kind: id === "node-http" ? "baseline" : "candidate",
    expectResult: "0x21",
    readyTimeoutMs: 15_000,
    prepare(port) {
      return {
        cmd: process.execPath,
        args: [join(serversDir, script), "--port", String(port), ...extraArgs],
        cwd: benchDir,
      };
    },
  };
}

function uwsCandidate(id, pkg) {
  const base = candidate(id, `uWS (${pkg})`, "uws.mjs", ["--pkg", pkg]);
  return {
    ...base,
    prepare(port) {
      resolveOrSkip(pkg);
      const probe = spawnSync(
        process.execPath,
        [join(serversDir, "uws.mjs"), "--probe", "--pkg", pkg],
        {
          cwd: benchDir,
          encoding: "utf8",
          timeout: 20_000,
        },
      );
      let info;
      try {
        info = JSON.parse(probe.stdout.trim().split("\n").pop());
      } catch {
        throw new Skip(
          `probe failed: ${(probe.stderr || probe.stdout || String(probe.error)).trim()}`,
        );
      }
      this.version = info.version;
      this.loadInfo = info;
      if (!info.loaded)
        throw new Skip(
          `does not load on Node ${process.versions.node}: ${firstLines(info.error, 3)}`,
        );
      return { ...base.prepare(port), version: info.version };
    },
  };
}

const SERVERS = [
  candidate("node-http", "bare node:http", "nodeHttp.mjs"),
  {
    ...candidate("fastify", "fastify", "fastify.mjs"),
    prepare(port) {
      const { version } = resolveOrSkip("fastify");
      return {
        cmd: process.execPath,
        args: [join(serversDir, "fastify.mjs"), "--port", String(port)],
        cwd: benchDir,
        version,
      };
    },
  },
  uwsCandidate("uws-truffle", "@trufflesuite/uws-js-unofficial"),
  uwsCandidate("uws-btc", "@btc-vision/uwebsockets.js"),
  ganachePeer(),
  hardhatPeer(),
  anvilPeer(),
  nodexServer({ id: "nodex", label: "Nodex" }),
];

if (args.list) {
  for (const s of SERVERS) process.stdout.write(`${s.id.padEnd(12)} ${s.label} [${s.kind}]\n`);
  process.exit(0);
}

let selected = SERVERS;
if (args.only !== undefined) {
  const wanted = args.only
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const unknown = wanted.filter((w) => !SERVERS.some((s) => s.id === w));
  if (unknown.length > 0)
    usage(
      `unknown server(s) in --only: ${unknown.join(", ")} (known: ${SERVERS.map((s) => s.id).join(", ")})`,
    );
  selected = SERVERS.filter((s) => wanted.includes(s.id));
}

// ---------------------------------------------------------------------------------------------
// Child processes (bench/lib/proc.mjs): all stopped on exit, also on Ctrl-C.

let tmp;
const cleanupSync = installCleanup(() => {
  if (tmp) {
    rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  }
});

// ---------------------------------------------------------------------------------------------
// Answers

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;

/** Checks the answer to a workload body; returns the exact response text (autocannon's expectBody). */
async function verify(port, workload, expectResult) {
  const res = await post(port, workload.body, 5000);
  if (res.status < 200 || res.status >= 300)
    throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 200)}`);
  let json;
  try {
    json = JSON.parse(res.text);
  } catch {
    throw new Error(`not JSON: ${res.text.slice(0, 200)}`);
  }
  const checkOne = (r, id) => {
    if (r === null || typeof r !== "object" || Array.isArray(r))
      throw new Error(`not a JSON-RPC response object: ${JSON.stringify(r).slice(0, 200)}`);
    if (r.jsonrpc !== "2.0") throw new Error(`jsonrpc is ${JSON.stringify(r.jsonrpc)}, not "2.0"`);
    if (r.id !== id) throw new Error(`id is ${JSON.stringify(r.id)}, expected ${id}`);
    if ("error" in r) throw new Error(`JSON-RPC error: ${JSON.stringify(r.error).slice(0, 200)}`);
    if (typeof r.result !== "string" || !QUANTITY.test(r.result))
      throw new Error(`result is not a quantity: ${JSON.stringify(r.result)}`);
    if (expectResult !== undefined && r.result !== expectResult)
      throw new Error(`result is ${r.result}, expected ${expectResult}`);
    return r.result;
  };
  if (workload.calls === 1) {
    if (Array.isArray(json)) throw new Error("answered a single request with an array");
    return { text: res.text, result: checkOne(json, 1), contentType: res.headers["content-type"] };
  }
  if (!Array.isArray(json))
    throw new Error(`batch answered with ${JSON.stringify(json).slice(0, 200)}`);
  if (json.length !== workload.calls)
    throw new Error(`batch of ${workload.calls} answered with ${json.length} responses`);
  // A batch response may come in any order: match by id.
  const byId = new Map(json.map((r) => [r?.id, r]));
  let result;
  for (let id = 1; id <= workload.calls; id++) result = checkOne(byId.get(id) ?? null, id);
  return { text: res.text, result, contentType: res.headers["content-type"] };
}

// ---------------------------------------------------------------------------------------------
// Output

const OTHER_CPU_NOTE = 0.15;

function printWorkload(workload, runs) {
  const nodex = runs.find((r) => r.server.id === "nodex" && r.results[workload.id]?.measured);
  const base = runs.find((r) => r.server.id === "node-http" && r.results[workload.id]?.measured);
  const ref = (r) => r?.results[workload.id].measured.reqPerSec;
  const headers = ["server", "version", "req/s"];
  if (workload.calls > 1) headers.push("calls/s");
  if (opts.rounds > 1) headers.push("req/s range");
  headers.push("p50 ms", "p99 ms", "errors", "srv CPU", "srv µs/req", "÷ Nodex", "÷ node:http");
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const w = run.results[workload.id];
    const name = run.server.label;
    if (!w?.measured) {
      const why = run.skipped ?? w?.skipped ?? "not measured";
      notes.push(`  ${name}: not measured: ${firstLines(why, 1)}`);
      continue;
    }
    const m = w.measured;
    const errs = m.non2xx + m.errors + m.timeouts + m.mismatches;
    const row = [name, run.version ?? "", fmtInt(m.reqPerSec)];
    if (workload.calls > 1) row.push(fmtInt(m.callsPerSec));
    if (opts.rounds > 1) row.push(`${fmtK(w.spread.min)}–${fmtK(w.spread.max)}`);
    row.push(
      fmtMs(m.latencyMs.p50),
      fmtMs(m.latencyMs.p99),
      errs === 0 ? "0" : `${errs} !`,
      m.serverCPU ? `${Math.round(m.serverCPU.share * 100)}%` : "—",
      m.serverCPU?.usPerRequest ? m.serverCPU.usPerRequest.toFixed(1) : "—",
      fmtRatio(m.reqPerSec, ref(nodex)),
      fmtRatio(m.reqPerSec, ref(base)),
    );
    rows.push(row);
    if (errs > 0) {
      notes.push(
        `  ${name}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts, ${m.mismatches} wrong bodies out of ${m.requests} requests`,
      );
    }
    if (m.otherCPU && m.otherCPU.share > OTHER_CPU_NOTE) {
      notes.push(
        `  ${name}: other processes used ${Math.round(m.otherCPU.share * 100)}% of a core during the measurement: figures are noisy`,
      );
    }
    if (m.clientCPU.share > 0.9) {
      notes.push(
        `  ${name}: the load generator used ${Math.round(m.clientCPU.share * 100)}% of a core: req/s is capped by the client, compare srv µs/req`,
      );
    }
  }
  log("");
  log(
    `== ${workload.title} (${opts.connections} connections, ${opts.duration} s after ${opts.warmup} s warm-up` +
      `${opts.rounds > 1 ? `, median of ${opts.rounds} rounds` : ""}) ==`,
  );
  log(
    `   body: ${workload.body.length > 80 ? `${workload.body.slice(0, 77)}...` : workload.body} (${Buffer.byteLength(workload.body)} bytes)`,
  );
  log("");
  if (rows.length > 0) {
    const align = headers.map((_, i) => (i < 2 ? "l" : "r"));
    log(table(headers, rows, align));
  } else {
    log("(no server measured)");
  }
  if (!nodex) log("(÷ Nodex: Nodex was not measured in this run)");
  if (notes.length > 0) {
    log("");
    log("notes:");
    for (const n of notes) log(n);
  }
}

// ---------------------------------------------------------------------------------------------
// Main

/** One round for one server: start it, check and measure each workload, stop it. */
async function benchServer(server, run, round) {
  const port = await freePort();
  const logFile = join(tmp, `${server.id}-${round}.log`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  try {
    if (!handle || run.skipped) return;
    for (const workload of WORKLOADS) {
      run.results[workload.id] ??= { rounds: [] };
      const entry = run.results[workload.id];
      let check;
      try {
        check = await verify(port, workload, server.expectResult);
        entry.verified = {
          result: check.result,
          contentType: check.contentType ?? null,
          body: check.text,
        };
      } catch (err) {
        entry.skipped = `wrong answer to the ${workload.id} workload: ${err.message}`;
        log(`  ${workload.id}: ${entry.skipped}`);
        continue;
      }
      if (handle.done) {
        entry.skipped = "the server exited";
        break;
      }
      const m = await measure(handle, port, workload, check.text, opts);
      m.round = round;
      entry.rounds.push(m);
      const errs = m.non2xx + m.errors + m.timeouts + m.mismatches;
      log(
        `  ${workload.id.padEnd(6)} ${fmtInt(m.reqPerSec).padStart(8)} req/s  p50 ${fmtMs(m.latencyMs.p50)} ms  p99 ${fmtMs(m.latencyMs.p99)} ms` +
          `  errors ${errs}  server CPU ${m.serverCPU ? `${Math.round(m.serverCPU.share * 100)}%` : "?"}  client CPU ${Math.round(m.clientCPU.share * 100)}%` +
          (m.otherCPU ? `  other CPU ${Math.round(m.otherCPU.share * 100)}%` : ""),
      );
      if (handle.done) {
        entry.note = "the server exited during the measurement";
        log(`  ${entry.note}\n${indent(readTail(logFile, 8), "      | ")}`);
        break;
      }
    }
  } finally {
    await stopChild(handle);
  }
}

/**
 * Each workload's figure is the round with the median req/s, among the rounds where other
 * processes stayed under OTHER_CPU_NOTE (all rounds if none did); the spread is kept beside it.
 */
function summarize(run) {
  for (const entry of Object.values(run.results)) {
    if (entry.rounds.length === 0) continue;
    const quiet = entry.rounds.filter((r) => !r.otherCPU || r.otherCPU.share <= OTHER_CPU_NOTE);
    const used = quiet.length > 0 ? quiet : entry.rounds;
    const sorted = [...used].sort((a, b) => a.reqPerSec - b.reqPerSec);
    entry.measured = sorted[Math.floor((sorted.length - 1) / 2)];
    entry.roundsUsed = used.map((r) => r.round);
    entry.spread = { min: sorted[0].reqPerSec, max: sorted[sorted.length - 1].reqPerSec };
  }
}

async function main() {
  const started = new Date();
  ensureBenchDeps();
  await loadAutocannon();
  if (selected.some((s) => s.kind === "nodex")) ensureNodexBuilt(args.build);

  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-rpc-"));
  const cpu = cpus();
  log(
    `RPC bench: eth_chainId, ${selected.length} servers × ${WORKLOADS.length} workloads${opts.rounds > 1 ? ` × ${opts.rounds} rounds` : ""}, ` +
      `${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s each`,
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), autocannon ${packageJSON("autocannon").json.version} in-process`,
  );

  const runs = selected.map((server) => ({
    server: { id: server.id, label: server.label, kind: server.kind },
    version: server.version ?? null,
    results: {},
  }));
  for (let round = 1; round <= opts.rounds; round++) {
    for (const [i, server] of selected.entries()) {
      const run = runs[i];
      if (run.skipped) continue;
      log("");
      log(
        `[${server.id}] ${server.label}${opts.rounds > 1 ? `, round ${round}/${opts.rounds}` : ""}`,
      );
      try {
        await benchServer(server, run, round);
      } catch (err) {
        log(`  failed: ${err.stack ?? err}`);
        run.skipped = `bench error: ${err.message}`;
      }
    }
  }
  for (const run of runs) summarize(run);

  for (const workload of WORKLOADS) printWorkload(workload, runs);

  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${stamp}.json`);
  const report = {
    bench: "rpc/eth_chainId",
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    options: opts,
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cores: cpu.length,
      cpu: cpu[0]?.model ?? null,
    },
    commit: gitCommit() ?? null,
    workloads: WORKLOADS.map(({ id, title, body, calls }) => ({ id, title, body, calls })),
    runs,
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log("");
  log(`raw results: ${relative(root, file)}`);
}

main()
  .catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    cleanupSync();
  });
