#!/usr/bin/env node
// Hardhat bench: the Hardhat project of test/clients/hardhat (its mocha suite: fixtures,
// the chai matchers, the network helpers), run unchanged with `hardhat test` against Nodex
// (`nodex --regtest`: cold, a fresh node; warm, a second run on the same node), Hardhat's
// in-process network (`--network hardhat`), `hardhat node` (`--network localhost`) and Anvil,
// in one run. Prints the wall time of each `hardhat test` process and mocha's own time of the
// suite, the tests passed and failed, and the ratios to Nodex; writes
// bench/results/hardhat-<timestamp>.json.
//
//   node bench/hardhat/run.mjs                      (from the repo root, after npm ci; ~1 min)
//   node bench/hardhat/run.mjs --only nodex,anvil --runs 3
//
// See bench/README.md (bench/hardhat) for what it measures and how to read the output.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { fmtRatio, indent, lastLines, log, readTail, table } from "../lib/format.mjs";
import { freePort } from "../lib/http.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { anvilPeer, hardhatPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import { benchDir, ensureBenchDeps, ensureNodexBuilt, gitCommit, root } from "../lib/setup.mjs";

const USAGE = `usage: node bench/hardhat/run.mjs [--runs N] [--only a,b] [--build]

  --runs N     runs of the suite on each target, one after another (default 2: on a node
               the first is cold, a fresh node, the others warm, the same node)
  --only a,b   targets: nodex, nodex-estimating, hardhat (in-process), hardhat-node, anvil
               (default all)
  --build      run npm run build even if apps/node/dist/main.js exists`;

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "2" },
    only: { type: "string" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const runsPerTarget = Number(args.runs);
if (!Number.isInteger(runsPerTarget) || runsPerTarget < 1) {
  process.stderr.write(`--runs must be a positive integer\n${USAGE}\n`);
  process.exit(2);
}

const PROJECT = join(root, "test/clients/hardhat");
const COINBASE = "0xc014ba5ec014ba5ec014ba5ec014ba5ec014ba5e";

/** Hardhat of the test/clients workspace (root node_modules): the project's own Hardhat. */
function hardhatCli() {
  const require = createRequire(join(root, "test/clients/package.json"));
  try {
    const dir = dirname(require.resolve("hardhat/package.json"));
    const version = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
    return { path: join(dir, "internal/cli/bootstrap.js"), version };
  } catch (err) {
    process.stderr.write(
      `hardhat is not installed for test/clients (${err.message}): run npm ci at the repo root\n`,
    );
    process.exit(1);
  }
}

// Every server runs as the project's `localhost` network, as users point a project at a local
// node: the client then takes the same path on each (hardhat-ethers sends with a fixed gas
// limit to a node that answers `hardhat_metadata`, as Hardhat's node and Nodex do, and
// estimates each send elsewhere). `nodex-estimating` runs Nodex as the project's `nodex`
// network: every send estimated first, as CI's test/clients runs it.
// The network helpers refuse a node whose client version says neither Hardhat nor Anvil; the
// coinbase is Hardhat's, so that fees go to no signer; `debug` for debug_traceCall.
const NODEX_ARGS = [
  "--client-version",
  "HardhatNetwork/nodex",
  "--coinbase",
  COINBASE,
  "--rpc-modules",
  "eth,net,web3,rpc,txpool,nodex,evm,personal,mnr,hardhat,anvil,debug",
];
const TARGETS = [
  {
    id: "nodex",
    label: "Nodex",
    network: "localhost",
    urlEnv: "LOCALHOST_URL",
    server: nodexServer({
      extraArgs: NODEX_ARGS,
    }),
  },
  {
    id: "nodex-estimating",
    label: "Nodex (nodex network)",
    network: "nodex",
    urlEnv: "NODEX_URL",
    server: nodexServer({
      extraArgs: NODEX_ARGS,
    }),
  },
  { id: "hardhat", label: "Hardhat in-process", network: "hardhat" },
  {
    id: "hardhat-node",
    label: "Hardhat node",
    network: "localhost",
    urlEnv: "LOCALHOST_URL",
    server: hardhatPeer(),
  },
  {
    id: "anvil",
    label: "Anvil",
    network: "localhost",
    urlEnv: "LOCALHOST_URL",
    server: anvilPeer(),
  },
];
const only = args.only?.split(",").map((s) => s.trim());
const unknown = (only ?? []).filter((id) => !TARGETS.some((t) => t.id === id));
if (unknown.length > 0) {
  process.stderr.write(`unknown target(s): ${unknown.join(", ")}\n${USAGE}\n`);
  process.exit(2);
}
const selected = TARGETS.filter((t) => !only || only.includes(t.id));

const hardhat = hardhatCli();

/** `hardhat <args>` in the project; resolves with the exit code, output and wall time. */
function runHardhat(argv, env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [hardhat.path, ...argv], {
      cwd: PROJECT,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      output += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      output += d;
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output, ms: performance.now() - t0 }));
  });
}

/** One `hardhat test` of the suite; its wall time and mocha's report. */
async function runSuite(target, url, tmp, n) {
  const file = join(tmp, `${target.id}-${n}.json`);
  const env = { MOCHA_JSON: file, ...(target.urlEnv ? { [target.urlEnv]: url } : {}) };
  const r = await runHardhat(["test", "--no-compile", "--network", target.network], env);
  if (!existsSync(file)) {
    throw new Error(`hardhat test wrote no report (exit ${r.code}):\n${lastLines(r.output, 15)}`);
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  return {
    wallMs: Math.round(r.ms),
    mochaMs: report.stats.duration,
    tests: report.stats.tests,
    passed: report.stats.passes,
    failed: report.stats.failures,
    failures: report.failures.map((f) => `${f.fullTitle}: ${(f.err.message ?? "").split("\n")[0]}`),
  };
}

async function measureTarget(target, tmp) {
  const result = { id: target.id, label: target.label, runs: [] };
  log(`${target.label}:`);
  let handle;
  let url;
  try {
    if (target.server) {
      const port = await freePort();
      const logFile = join(tmp, `${target.id}.log`);
      handle = await launchServer(target.server, result, { port, tmp, logFile });
      if (!handle || result.skipped) return result;
      url = `http://127.0.0.1:${port}`;
    } else {
      result.version = hardhat.version;
    }
    for (let n = 1; n <= runsPerTarget; n++) {
      const run = await runSuite(target, url, tmp, n);
      run.kind = !target.server ? `run ${n}` : n === 1 ? "cold" : "warm";
      result.runs.push(run);
      log(
        `  ${run.kind}: ${(run.wallMs / 1000).toFixed(1)} s wall, mocha ${(run.mochaMs / 1000).toFixed(1)} s; ${run.passed} passed, ${run.failed} failed`,
      );
    }
  } catch (err) {
    result.error = err.message;
    if (target.server) result.logTail = readTail(join(tmp, `${target.id}.log`), 12);
    log(
      `  failed: ${err.message}${result.logTail ? `\n${indent(result.logTail, "      | ")}` : ""}`,
    );
  } finally {
    await stopChild(handle);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

installCleanup();
if (selected.some((t) => t.id === "hardhat-node" || t.id === "anvil")) {
  ensureBenchDeps(["hardhat", "@foundry-rs/anvil"]);
}
if (selected.some((t) => t.id.startsWith("nodex"))) ensureNodexBuilt(args.build);
const tmp = mkdtempSync(join(tmpdir(), "nodex-bench-hardhat-"));
const results = [];
const started = new Date();
const load = { start: loadavg()[0] };
try {
  log(
    `Hardhat bench: test/clients/hardhat with hardhat ${hardhat.version}, ${runsPerTarget} run(s) per target; ${cpus().length} cores, Node ${process.versions.node}, load average ${load.start.toFixed(1)}`,
  );
  const compiled = await runHardhat(["compile", "--quiet"], {});
  if (compiled.code !== 0) throw new Error(`hardhat compile failed:\n${compiled.output}`);
  for (const target of selected) results.push(await measureTarget(target, tmp));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
load.end = loadavg()[0];

const nodex = results.find((r) => r.id === "nodex");
const nodexWarm = nodex?.runs.at(-1);
const rows = [];
for (const r of results) {
  if (r.runs.length === 0) {
    rows.push([r.label, r.version ?? "—", "—", "—", "—", "—", "—", "—", r.skipped ?? r.error]);
    continue;
  }
  for (const run of r.runs) {
    rows.push([
      r.label,
      r.version ?? "—",
      run.kind,
      (run.wallMs / 1000).toFixed(1),
      (run.mochaMs / 1000).toFixed(1),
      `${run.passed}/${run.tests}`,
      fmtRatio(run.wallMs, nodexWarm?.wallMs),
      fmtRatio(run.mochaMs, nodexWarm?.mochaMs),
      "",
    ]);
  }
}
const headers = [
  "target",
  "version",
  "run",
  "wall s",
  "mocha s",
  "passed",
  "wall ÷ Nodex warm",
  "mocha ÷ Nodex warm",
  "note",
];
console.log(`\n${table(headers, rows, ["l", "l", "l", "r", "r", "r", "r", "r", "l"])}`);
console.log(
  `\nMarkdown:\n\n| ${headers.slice(0, -1).join(" | ")} |\n|${" --- |".repeat(headers.length - 1)}\n${rows
    .map((row) => `| ${row.slice(0, -1).join(" | ")} |`)
    .join("\n")}`,
);
for (const r of results) {
  for (const run of r.runs) {
    if (run.failures.length > 0) {
      console.log(`\n${r.label} (${run.kind}) failed:\n${indent(run.failures.join("\n"), "  ")}`);
    }
  }
}

const outDir = join(benchDir, "results");
mkdirSync(outDir, { recursive: true });
const file = join(outDir, `hardhat-${started.toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  `${JSON.stringify(
    {
      started: started.toISOString(),
      commit: gitCommit(),
      node: process.versions.node,
      cores: cpus().length,
      loadAverage: load,
      hardhat: hardhat.version,
      runsPerTarget,
      results,
    },
    null,
    2,
  )}\n`,
);
log(`results: ${relative(root, file)}`);
