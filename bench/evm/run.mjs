#!/usr/bin/env node
// EVM bench: the programs of the evm-bench suite (github.com/ziyadedher/evm-bench: ERC-20
// transfers, mints and approval loops, snailtracer, ten thousand hashes), written again in
// bench/evm/contracts and compiled here with solc, run as calls on Nodex's interpreter
// (@nodex/evm's Executor), on the Executor's library mode, on @ethereumjs/evm alone, and over
// eth_call on Anvil (revm) and on Nodex's node. Every engine gets the same inputs, varied from
// run to run, after a warm-up; every answer is compared with Nodex's and the run fails on any
// difference. Prints the median ms per program and engine, the ratios to revm and to Nodex, and
// their sums, and writes bench/results/evm-<timestamp>.json.
//
//   node bench/evm/run.mjs                          (from the repo root)
//   node bench/evm/run.mjs --only nodex,anvil --programs snailtracer --runs 20
//
// See bench/README.md (bench/evm) for what it measures and how to read the output.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ACCOUNT0, loadEthers, sign, waitMined } from "../lib/eth.mjs";
import { fmtInt, fmtMs, fmtRatio, log, readTail, table } from "../lib/format.mjs";
import { freePort, RPCClient } from "../lib/http.mjs";
import { cpuWindow } from "../lib/load.mjs";
import { installCleanup, startChild, stopChild } from "../lib/proc.mjs";
import { anvilPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import {
  benchDir,
  benchRequireOf,
  ensureBenchDeps,
  ensureNodexBuilt,
  gitCommit,
  root,
} from "../lib/setup.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/evm/run.mjs [--runs N] [--warmup N] [--budget S] [--spp N] [--only a,b] [--programs a,b] [--build] [--list]

  --runs N       measured calls per program and engine, each with other inputs (default 10)
  --warmup N     calls before those, not counted, with inputs of their own (default 5)
  --budget S     stop measuring a program on an engine once S seconds have gone by, after at
                 least 3 calls; the warm-up stops after S/2 seconds, after 1 call (default 20)
  --spp N        snailtracer's samples per pixel, 4 pixels a call (default 8, as evm-bench)
  --only a,b     engines: nodex, nodex-library, ethereumjs, anvil, nodex-rpc (default all)
  --programs a,b programs (default all; see --list)
  --build        run npm run build even if apps/node/dist/main.js exists
  --list         print the engine and program ids
  -h, --help     print this`;

function parseOptions() {
  try {
    return parseArgs({
      options: {
        runs: { type: "string", default: "10" },
        warmup: { type: "string", default: "5" },
        budget: { type: "string", default: "20" },
        spp: { type: "string", default: "8" },
        only: { type: "string" },
        programs: { type: "string" },
        build: { type: "boolean", default: false },
        list: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }).values;
  } catch (err) {
    // An unknown flag or a stray argument: exit 2, naming it.
    process.stderr.write(`${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
}
const args = parseOptions();

const integer = (name, min) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`--${name} must be an integer of at least ${min}\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
};

/** Calls measured at least on every engine, whatever --budget says. */
const MIN_RUNS = 3;

const opts = {
  runs: integer("runs", MIN_RUNS),
  warmup: integer("warmup", 0),
  budget: integer("budget", 1),
  spp: integer("spp", 1),
};

/** The caller of every call (as evm-bench's revm runner's). */
const CALLER = "0x1000000000000000000000000000000000000001";
/** The gas of every call: above what any program uses (snailtracer ~120 M), under 2³². */
const CALL_GAS = 1_000_000_000n;
const GAS_DEPLOY = 10_000_000n;

/** A holder address per input: a fresh storage slot for each run. */
const holder = (i) => `0x${(0xbe00_0000 + i).toString(16).padStart(40, "0")}`;

const PROGRAMS = [
  {
    id: "erc20.transfer",
    contract: "ERC20Transfer",
    what: "a mint, then 5,000 transfers to one holder",
    args: (i) => [holder(i), 1 + 3 * i],
  },
  {
    id: "erc20.mint",
    contract: "ERC20Mint",
    what: "5,000 mints to one holder",
    args: (i) => [holder(i), 1 + 3 * i],
  },
  {
    id: "erc20.approval-transfer",
    contract: "ERC20ApprovalTransfer",
    what: "999 × (approve, transferFrom, 3 allowance checks)",
    args: (i) => [holder(i), 1 + 3 * i],
  },
  {
    id: "snailtracer",
    contract: "SnailTracer",
    what: `scene set-up in storage, 4 pixels × ${opts.spp} paths`,
    // Pixels moved by up to 3 × 2 from run to run: other paths, other colours.
    args: (i) => [i % 4, Math.floor(i / 4) % 3, opts.spp],
  },
  {
    id: "ten-thousand-hashes",
    contract: "TenThousandHashes",
    what: "20,000 keccak256 of a word, folded",
    args: (i) => [1_000_003n * BigInt(i + 1)],
  },
];

const ENGINES = [
  {
    id: "nodex",
    label: "Nodex interpreter",
    kind: "process",
    what: "@nodex/evm Executor.call, fast mode (the interpreter of calls), in process",
  },
  {
    id: "nodex-library",
    label: "Nodex library mode",
    kind: "process",
    what: "Executor with libraryCalls: @ethereumjs/evm with Nodex's patches",
  },
  {
    id: "ethereumjs",
    label: "ethereumjs",
    kind: "process",
    what: "@ethereumjs/evm alone: createEVM + runCall, simple state manager",
  },
  {
    id: "anvil",
    label: "revm (Anvil)",
    kind: "rpc",
    what: "eth_call to Anvil, less a trivial eth_call",
  },
  {
    id: "nodex-rpc",
    label: "Nodex node",
    kind: "rpc",
    what: "eth_call to nodex --regtest, less a trivial eth_call",
  },
];

if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
if (args.list) {
  console.log("engines:");
  for (const e of ENGINES) console.log(`  ${e.id.padEnd(14)} ${e.what}`);
  console.log("programs:");
  for (const p of PROGRAMS) console.log(`  ${p.id.padEnd(24)} ${p.what}`);
  process.exit(0);
}

const pick = (list, flag, ids) => {
  if (!ids) return list;
  const wanted = ids
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted.filter((id) => !list.some((x) => x.id === id));
  if (unknown.length > 0 || wanted.length === 0) {
    process.stderr.write(
      `unknown ${flag} id(s): ${unknown.join(", ") || "(none given)"}; known: ${list.map((x) => x.id).join(", ")}\n`,
    );
    process.exit(2);
  }
  return list.filter((x) => wanted.includes(x.id));
};
const engines = pick(ENGINES, "--only", args.only);
const programs = pick(PROGRAMS, "--programs", args.programs);

// ---------------------------------------------------------------------------------------------
// The programs: compiled together, calldata per input

function compile() {
  const solc = benchRequireOf("solc");
  const dir = join(here, "contracts");
  const sources = {};
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".sol")))
    sources[f] = { content: readFileSync(join(dir, f), "utf8") };
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: "Solidity",
        sources,
        settings: {
          // Cancun: the rules Nodex runs; Anvil is started with --hardfork cancun.
          evmVersion: "cancun",
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
        },
      }),
    ),
  );
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  return { contracts: output.contracts, solc: solc.version() };
}

/** Input indices: the measured calls get 0, 1, …; the warm-up 1000, 1001, … */
const WARMUP_BASE = 1000;

function buildPlan(ethers, compiled) {
  return {
    from: CALLER,
    programs: programs.map((p) => {
      const c = compiled.contracts[`${p.contract}.sol`][p.contract];
      const iface = new ethers.Interface(c.abi);
      const data = (i) => iface.encodeFunctionData("Benchmark", p.args(i));
      return {
        id: p.id,
        creation: `0x${c.evm.bytecode.object}`,
        gas: String(CALL_GAS),
        warmup: Array.from({ length: opts.warmup }, (_, k) => data(WARMUP_BASE + k)),
        inputs: Array.from({ length: opts.runs }, (_, i) => data(i)),
        minRuns: MIN_RUNS,
        budgetMs: opts.budget * 1000,
        minWarmup: 1,
        warmupBudgetMs: (opts.budget * 1000) / 2,
      };
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// In-process engines: engine.mjs in a child process each

let tmp;
const cleanupSync = installCleanup(() => {
  if (tmp) {
    rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  }
});

async function runProcessEngine(engine, planFile, run) {
  const outFile = join(tmp, `${engine.id}.out.json`);
  const logFile = join(tmp, `${engine.id}.log`);
  const handle = startChild(
    {
      cmd: process.execPath,
      args: [join(here, "engine.mjs"), engine.id, planFile, outFile],
      cwd: root,
    },
    logFile,
  );
  log(`  pid ${handle.pid}`);
  const w = cpuWindow(handle.pid);
  const { code, signal } = await handle.exited;
  const cpu = w.end(1);
  await stopChild(handle);
  if (code !== 0) {
    throw new Error(
      `engine.mjs ${engine.id} exited with ${code ?? signal}:\n${readTail(logFile, 15)}`,
    );
  }
  const out = JSON.parse(readFileSync(outFile, "utf8"));
  run.version = out.version;
  run.otherCPUShare = cpu.otherCPU?.share ?? null;
  run.programs = out.programs;
}

// ---------------------------------------------------------------------------------------------
// Engines over eth_call: Anvil and Nodex's node

function anvilEVMPeer() {
  const peer = anvilPeer();
  return {
    ...peer,
    prepare(port, dir) {
      const spec = peer.prepare(port, dir);
      return {
        ...spec,
        args: [
          ...spec.args,
          "--hardfork",
          "cancun",
          // eth_call's gas may then go past the block's 30 M (--gas-limit cannot go with it).
          "--disable-block-gas-limit",
          "--disable-code-size-limit",
        ],
      };
    },
  };
}

const hex = (n) => `0x${BigInt(n).toString(16)}`;

async function deploy(rpc, ctx, creation) {
  const { raw, hash } = sign({
    chainId: ctx.chainId,
    nonce: ctx.nonce++,
    gasPrice: ctx.gasPrice,
    gasLimit: GAS_DEPLOY,
    to: null,
    data: creation,
  });
  await rpc.call("eth_sendRawTransaction", [raw]);
  const receipt = await waitMined(rpc, hash, 30_000);
  if (!receipt) throw new Error(`${hash} was not mined`);
  if (receipt.status !== "0x1") throw new Error(`deployment ${hash} failed`);
  return receipt.contractAddress;
}

/** Median of `n` eth_calls to an address without code: the round trip around execution. */
async function roundTrip(rpc, n = 50) {
  const body = { from: CALLER, to: `0x${"00".repeat(18)}dead`, data: "0x" };
  const times = [];
  for (let i = 0; i < n + 10; i++) {
    const t0 = performance.now();
    const r = await rpc.call("eth_call", [body, "latest"]);
    const ms = performance.now() - t0;
    if (r !== "0x") throw new Error(`a call to an address without code answered ${r}`);
    if (i >= 10) times.push(ms);
  }
  return median(times);
}

async function runRPCEngine(engine, server, plan, run) {
  const port = await freePort();
  const logFile = join(tmp, `${engine.id}.log`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  const rpc = new RPCClient(port);
  try {
    if (!handle || run.skipped) throw new Error(run.skipped ?? "did not start");
    const chainId = BigInt(await rpc.call("eth_chainId"));
    const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
    const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
    const ctx = { chainId, gasPrice, nonce };
    const w = cpuWindow(handle.pid);
    run.roundTripMs = await roundTrip(rpc);
    log(`  a trivial eth_call: median ${fmtMs(run.roundTripMs)} ms`);
    run.programs = {};
    for (const p of plan.programs) {
      const to = await deploy(rpc, ctx, p.creation);
      const call = async (data) => {
        const t0 = performance.now();
        const output = await rpc.call(
          "eth_call",
          [{ from: CALLER, to, data, gas: hex(p.gas) }, "latest"],
          600_000,
        );
        return { ms: performance.now() - t0, output };
      };
      const warmupMs = [];
      const w0 = performance.now();
      for (const data of p.warmup) {
        if (warmupMs.length >= p.minWarmup && performance.now() - w0 > p.warmupBudgetMs) break;
        warmupMs.push((await call(data)).ms);
      }
      const runs = [];
      const t0 = performance.now();
      for (const data of p.inputs) {
        if (runs.length >= p.minRuns && performance.now() - t0 > p.budgetMs) break;
        runs.push(await call(data));
      }
      run.programs[p.id] = {
        warmupMs,
        rawMs: runs.map((r) => r.ms),
        ms: runs.map((r) => Math.max(0, r.ms - run.roundTripMs)),
        outputs: runs.map((r) => r.output),
      };
      log(`  ${p.id}: ${runs.length} calls, ${runs.map((r) => r.ms.toFixed(1)).join(" ")} ms`);
    }
    run.otherCPUShare = w.end(1).otherCPU?.share ?? null;
  } finally {
    rpc.close();
    await stopChild(handle);
  }
}

// ---------------------------------------------------------------------------------------------
// Figures and checks

function median(xs) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Every engine's answers against the reference's (the first engine run), input by input. */
function checkAnswers(runs) {
  const problems = [];
  const ok = runs.filter((r) => r.programs);
  const ref = ok[0];
  if (!ref) return problems;
  for (const p of programs) {
    const expected = ref.programs[p.id]?.outputs ?? [];
    for (const r of ok.slice(1)) {
      const got = r.programs[p.id]?.outputs ?? [];
      for (let i = 0; i < Math.min(expected.length, got.length); i++) {
        if (got[i] !== expected[i])
          problems.push(
            `${p.id}, input ${i}: ${r.engine.id} answered ${got[i].slice(0, 80)}, ${ref.engine.id} ${expected[i].slice(0, 80)}`,
          );
      }
    }
  }
  return problems;
}

function printTables(runs) {
  const ok = runs.filter((r) => r.programs);
  const med = (r, id) => {
    const m = r.programs?.[id];
    return m ? median(m.ms) : null;
  };
  const revm = ok.find((r) => r.engine.id === "anvil");
  const nodex = ok.find((r) => r.engine.id === "nodex");
  for (const p of programs) {
    const rows = [];
    const ref = runs.find((r) => r.programs?.[p.id]?.gasUsed);
    const gas = ref ? Number(ref.programs[p.id].gasUsed[0]) : null;
    for (const r of runs) {
      const m = r.programs?.[p.id];
      if (!m) {
        rows.push([r.engine.label, "—", "—", "—", "—", "—", "—"]);
        continue;
      }
      const value = median(m.ms);
      const raw = m.rawMs ? `${fmtMs(median(m.rawMs))} − ${fmtMs(r.roundTripMs)}` : "";
      rows.push([
        r.engine.label,
        String(m.ms.length),
        fmtMs(value),
        fmtMs(Math.min(...m.ms)),
        raw,
        revm ? fmtRatio(value, med(revm, p.id)) : "—",
        nodex ? fmtRatio(value, med(nodex, p.id)) : "—",
      ]);
    }
    log("");
    log(`${p.id}: ${p.what}${gas ? ` (${(gas / 1e6).toFixed(1)} Mgas on ${ref.engine.id})` : ""}`);
    log(
      table(
        ["engine", "runs", "median ms", "min ms", "eth_call − trivial", "÷ revm", "÷ Nodex"],
        rows,
        ["l", "r", "r", "r", "r", "r", "r"],
      ),
    );
  }

  // Sums of the medians, over the programs every shown engine ran.
  const sums = ok.map((r) => {
    const meds = programs.map((p) => med(r, p.id));
    return { r, sum: meds.every((x) => x !== null) ? meds.reduce((a, b) => a + b, 0) : null };
  });
  const sumOf = (id) => sums.find((s) => s.r.engine.id === id)?.sum ?? null;
  log("");
  log(`sum of the medians over ${programs.map((p) => p.id).join(", ")}`);
  log(
    table(
      ["engine", "version", "sum ms", "÷ revm", "÷ Nodex"],
      sums.map(({ r, sum }) => [
        r.engine.label,
        r.version ?? "—",
        fmtMs(sum),
        fmtRatio(sum, sumOf("anvil")),
        fmtRatio(sum, sumOf("nodex")),
      ]),
      ["l", "l", "r", "r", "r"],
    ),
  );
  const n = sumOf("nodex");
  const a = sumOf("anvil");
  const e = sumOf("ethereumjs");
  if (n && a) log(`  Nodex ÷ revm: ${fmtRatio(n, a)}`);
  if (n && e) log(`  ethereumjs ÷ Nodex: ${fmtRatio(e, n)}`);
  log(
    "  evm-bench's own figures (README, one laptop, their sources): evmone 66 ms, revm 84.8 ms, geth 235 ms, ethereumjs 146 s",
  );
  for (const r of runs) {
    if (r.error) log(`  - ${r.engine.label}: ${r.error.split("\n")[0]}`);
    for (const p of programs) {
      const m = r.programs?.[p.id];
      if (m && m.ms.length < opts.runs)
        log(`  - ${r.engine.label}, ${p.id}: ${m.ms.length} runs (--budget ${opts.budget} s)`);
      if (m && m.warmupMs.length < opts.warmup)
        log(`  - ${r.engine.label}, ${p.id}: ${m.warmupMs.length} warm-up calls (--budget)`);
    }
    // The interpreter should answer every call itself; library mode never does.
    if (r.engine.id === "nodex" && r.libraryRuns)
      log(
        `  - ${r.engine.label}: ${r.libraryRuns} of its measured calls fell back to the library (see the JSON, libraryRuns per program)`,
      );
    if (r.engine.id === "nodex-library" && r.programs && r.libraryRuns !== r.calls)
      log(
        `  - ${r.engine.label}: only ${r.libraryRuns ?? 0} of ${r.calls} calls ran on the library!`,
      );
    if (r.otherCPUShare !== null && r.otherCPUShare > 0.15)
      log(
        `  - ${r.engine.label}: other processes used ${Math.round(r.otherCPUShare * 100)}% of a core meanwhile (figures are noisy)`,
      );
  }
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  ensureBenchDeps(["ethers", "solc", "@foundry-rs/anvil"]);
  const ethers = await loadEthers();
  // The in-process engines import packages/*/dist; nodex-rpc runs apps/node/dist.
  ensureNodexBuilt(args.build);
  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-evm-"));
  const compiled = compile();
  const plan = buildPlan(ethers, compiled);
  const planFile = join(tmp, "plan.json");
  writeFileSync(planFile, JSON.stringify(plan));
  const cpu = cpus();
  log(
    `EVM bench: ${engines.map((e) => e.id).join(", ")}; ${programs.map((p) => p.id).join(", ")}; ` +
      `${opts.runs} runs after ${opts.warmup} warm-up calls, --budget ${opts.budget} s, snailtracer ${opts.spp} spp`,
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(
        " ",
      )}, contracts compiled with solc ${compiled.solc.split("+")[0]} (Cancun, optimizer 200)`,
  );
  const runs = engines.map((engine) => ({
    engine: { id: engine.id, label: engine.label, what: engine.what },
    version: null,
  }));
  let failed = false;
  for (const [i, engine] of engines.entries()) {
    const run = runs[i];
    log("");
    log(`[${engine.id}] ${engine.what}`);
    const s = Date.now();
    try {
      if (engine.kind === "process") await runProcessEngine(engine, planFile, run);
      else {
        const server =
          engine.id === "anvil"
            ? anvilEVMPeer()
            : nodexServer({ id: "nodex-rpc", label: "Nodex node" });
        await runRPCEngine(engine, server, plan, run);
      }
      if (engine.kind === "process") {
        for (const p of programs) {
          const m = run.programs[p.id];
          log(
            `  ${p.id}: ${m.ms.length} calls, median ${fmtMs(median(m.ms))} ms (${m.ms.map((x) => fmtMs(x)).join(" ")})`,
          );
        }
        const all = Object.values(run.programs);
        run.calls = all.reduce((a, m) => a + m.ms.length, 0);
        run.libraryRuns = all.reduce((a, m) => a + (m.libraryRuns ?? 0), 0);
      }
    } catch (err) {
      run.error = err.message;
      run.programs = undefined;
      failed = true;
      log(`  failed: ${err.message}`);
    }
    run.seconds = (Date.now() - s) / 1000;
    log(`  (${fmtInt(run.seconds)} s)`);
  }

  const problems = checkAnswers(runs);
  printTables(runs);

  const file = join(resultsDir, `evm-${stamp}.json`);
  const report = {
    bench: "evm",
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    options: opts,
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cores: cpu.length,
      cpu: cpu[0]?.model ?? null,
      loadavg: loadavg(),
    },
    commit: gitCommit() ?? null,
    solc: compiled.solc,
    caller: CALLER,
    callGas: String(CALL_GAS),
    programs: plan.programs.map((p) => ({ id: p.id, inputs: p.inputs, warmup: p.warmup })),
    runs,
    mismatches: problems,
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log("");
  log(`raw results: ${relative(root, file)} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  if (problems.length > 0) {
    log("");
    log(
      `THE ENGINES DISAGREE (${problems.length} answers differ from ${runs.find((r) => r.programs)?.engine.id}'s):`,
    );
    for (const p of problems.slice(0, 20)) log(`  ${p}`);
    process.exitCode = 1;
  } else if (failed) process.exitCode = 1;
  else log("every engine gave the same answer to every call");
}

main()
  .catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    cleanupSync();
  });
