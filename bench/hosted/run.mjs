#!/usr/bin/env node
// Hosted bench: what serving many users costs. The same chain (a token and --blocks blocks of
// transfers, one block in two with a log for the queried recipient) is served by Nodex in three
// modes, all running at once, each on its own copy of the chain, in one run:
//   local   no keys, no limits (the reference);
//   hosted  --rpc-hosted with one API key (created with `nodex keys create`) whose rate and
//           daily quota are high enough never to refuse, so every request is checked, weighed
//           and counted but none is refused;
//   redis   the same with --redis: what the replicas of an endpoint share goes through Redis
//           (Debian's redis-server, started here on 127.0.0.1).
// Workloads, each with autocannon over keep-alive connections: eth_blockNumber; eth_call of
// balanceOf for varied holders; eth_getLogs by address and topic over varied windows of 100
// blocks near the head. Each workload is measured in short windows that go round the modes (the
// first mode of each round turning), so that the machine's slow spells fall on every mode alike.
// Prints, as medians over the windows, requests per second, the median and 99th percentile
// latency and the node's CPU per request (Redis's included in the redis mode), and each mode's
// cost against the local window of the same round, in throughput and in CPU; writes
// bench/results/hosted-<ts>.json.
//
//   node bench/hosted/run.mjs                                (from the repo root; ~5 min)
//   node bench/hosted/run.mjs --rounds 6 --only local,hosted
//
// See bench/README.md (bench/hosted) for what it measures and how to read the output.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import {
  ACCOUNT0,
  compileToken,
  GAS_DEPLOY,
  GAS_TOKEN_TRANSFER,
  hex,
  loadEthers,
  sign,
  TOKEN_SUPPLY,
  TRANSFER_TOPIC,
  waitMined,
  word,
} from "../lib/eth.mjs";
import { fmtInt, fmtK, fmtMs, log, table } from "../lib/format.mjs";
import { freePort, RPCClient } from "../lib/http.mjs";
import { loadAutocannon, measure } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { launchServer, nodexServer } from "../lib/servers.mjs";
import { ensureBenchDeps, ensureNodexBuilt, gitCommit, NODEX_MAIN, root } from "../lib/setup.mjs";

const USAGE = `usage: node bench/hosted/run.mjs [--duration S] [--warmup S] [--connections N] [--blocks N] [--only a,b] [--build]

  --duration S     seconds of each measured window (default 2)
  --warmup S       seconds of unmeasured load on each node before a workload's windows (default 2)
  --connections N  concurrent keep-alive connections (default 32)
  --blocks N       transfer blocks of the chain (default 1000)
  --rounds R       windows of each mode per workload (default 12), taken round the modes in
                   turn; each mode's cost is the median of its ratio to the local window of
                   the same round
  --only a,b       modes: local, hosted, redis (default all; local is the reference)
  --build          run npm run build even if apps/node/dist/main.js exists`;

const { values: args } = parseArgs({
  options: {
    duration: { type: "string", default: "2" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    blocks: { type: "string", default: "1000" },
    rounds: { type: "string", default: "12" },
    only: { type: "string" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
function positive(name, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    process.stderr.write(`${name} must be a positive number, got ${JSON.stringify(text)}\n`);
    process.exit(2);
  }
  return n;
}
const load = {
  duration: positive("--duration", args.duration),
  warmup: Number(args.warmup),
  connections: Math.round(positive("--connections", args.connections)),
};
const BLOCKS = Math.round(positive("--blocks", args.blocks));
const ROUNDS = Math.round(positive("--rounds", args.rounds));
if (BLOCKS < 200) {
  process.stderr.write("--blocks must be at least 200: the log queries span 100 blocks\n");
  process.exit(2);
}
const MODES = ["local", "hosted", "redis"];
const only = args.only?.split(",").map((s) => s.trim()) ?? MODES;
const unknown = only.filter((m) => !MODES.includes(m));
if (unknown.length > 0) {
  process.stderr.write(`unknown mode(s): ${unknown.join(", ")}\n${USAGE}\n`);
  process.exit(2);
}
const modes = MODES.filter((m) => only.includes(m) || m === "local");

ensureBenchDeps(["autocannon", "solc", "ethers"]);
ensureNodexBuilt(args.build);
await loadEthers();
await loadAutocannon();

const tmp = mkdtempSync(join(tmpdir(), "nodex-bench-hosted-"));
const children = new Set();
installCleanup(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
});
const datadir = join(tmp, "nodex-datadir");
mkdirSync(datadir, { recursive: true });
const keysDir = join(tmp, "keys");
mkdirSync(keysDir, { recursive: true });

/** The two recipients of the chain's transfers, in turn: the first has a log every other block. */
const RECIPIENTS = [
  "0x00000000000000000000000000000000000a11ce",
  "0x0000000000000000000000000000000000000b0b",
];
/** Holders whose balances eth_call asks for: the recipients and accounts that hold nothing. */
const HOLDERS = Array.from({ length: 256 }, (_, i) =>
  i < 2 ? RECIPIENTS[i] : `0x${(0xc0ffee000000n + BigInt(i)).toString(16).padStart(40, "0")}`,
);

// ---------------------------------------------------------------------------------------------
// The chain

async function buildChain(port) {
  const rpc = new RPCClient(port);
  const chainId = Number(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const token = compileToken();
  let nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  const deploy = sign({
    chainId,
    nonce: nonce++,
    gasPrice,
    gasLimit: GAS_DEPLOY,
    to: null,
    data: token.bytecode + token.iface.encodeDeploy([TOKEN_SUPPLY]).slice(2),
  });
  await rpc.call("eth_sendRawTransaction", [deploy.raw]);
  const receipt = await waitMined(rpc, deploy.hash);
  if (receipt?.status !== "0x1") throw new Error("the token's deployment failed");
  const address = receipt.contractAddress;
  for (let i = 0; i < BLOCKS; i++) {
    const tx = sign({
      chainId,
      nonce: nonce++,
      gasPrice,
      gasLimit: GAS_TOKEN_TRANSFER,
      to: address,
      data: token.iface.encodeFunctionData("transfer", [RECIPIENTS[i % 2], 1n + BigInt(i)]),
    });
    await rpc.call("eth_sendRawTransaction", [tx.raw]);
    const r = await waitMined(rpc, tx.hash);
    if (r?.status !== "0x1") throw new Error(`transfer ${i} failed`);
  }
  const head = Number(await rpc.call("eth_blockNumber"));
  rpc.close();
  return { address, head, iface: token.iface };
}

// ---------------------------------------------------------------------------------------------
// Workloads: the same bodies in every mode; the local mode's answers are what the others must give

function workloads(chain) {
  const body = (id, method, params) => JSON.stringify({ jsonrpc: "2.0", id, method, params });
  const calls = HOLDERS.map((h, i) =>
    body(i + 1, "eth_call", [
      { to: chain.address, data: chain.iface.encodeFunctionData("balanceOf", [h]) },
      "latest",
    ]),
  );
  // Windows of 100 blocks ending at most 400 below the head (less on a short chain), each
  // another one.
  const span = Math.max(1, Math.min(400, chain.head - 100));
  const logs = Array.from({ length: 256 }, (_, i) => {
    const to = chain.head - ((i * 37) % span);
    return body(i + 1, "eth_getLogs", [
      {
        fromBlock: hex(to - 99),
        toBlock: hex(to),
        address: chain.address,
        topics: [TRANSFER_TOPIC, null, word(RECIPIENTS[0])],
      },
    ]);
  });
  return [
    { id: "blockNumber", label: "eth_blockNumber", body: body(1, "eth_blockNumber", []) },
    { id: "call", label: "eth_call (balanceOf)", bodies: calls },
    { id: "getLogs", label: "eth_getLogs (100 blocks, 50 logs)", bodies: logs },
  ];
}

/** Each body's answer on `port` (local mode): what every mode must answer. */
async function expectedAnswers(port, w) {
  const rpc = new RPCClient(port);
  const texts = new Set();
  for (const b of w.bodies ?? [w.body]) {
    const { status, text } = await rpc.raw(b);
    if (status !== 200 || text.includes('"error"'))
      throw new Error(`${w.label}: the reference answer is an error: ${text.slice(0, 300)}`);
    texts.add(text);
  }
  rpc.close();
  return texts;
}

// ---------------------------------------------------------------------------------------------
// Redis

async function startRedis() {
  const found = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (found.error !== undefined)
    return { skipped: "redis-server is not installed (apt-get install -y redis-server)" };
  const port = await freePort();
  const dir = join(tmp, "redis");
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    "redis-server",
    [
      "--bind",
      "127.0.0.1",
      "--port",
      String(port),
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
    ],
    { stdio: "ignore" },
  );
  children.add(child);
  for (let i = 0; i < 100; i++) {
    if (await ping(port)) return { port, child, version: found.stdout.trim() };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  return { skipped: "redis-server did not answer PING within 10 s" };
}

function ping(port) {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.setTimeout(500, () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(false));
    s.once("connect", () => s.write("PING\r\n"));
    s.once("data", (d) => {
      s.end();
      resolve(d.toString().startsWith("+PONG"));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Modes

/** A key for the hosted modes, made with the node's own command while the node is stopped (in Redis for the redis mode). */
function createKey(redisUrl) {
  const r = spawnSync(
    process.execPath,
    [
      NODEX_MAIN,
      "keys",
      "create",
      "--regtest",
      "--datadir",
      redisUrl === undefined ? keysDir : datadir,
      "--name",
      "bench",
      // Limits that are checked and counted on every request, and never reached here.
      "--rate",
      "1000000000",
      "--daily",
      "1000000000000000",
      // With Redis, the replicas' registry is there: the key is made in it.
      ...(redisUrl === undefined ? [] : ["--redis", redisUrl]),
    ],
    { encoding: "utf8" },
  );
  const key = /key:\s*(\S+)/.exec(r.stdout ?? "")?.[1];
  if (r.status !== 0 || key === undefined)
    throw new Error(`nodex keys create failed (${r.status}): ${r.stderr || r.stdout}`);
  return key;
}

/**
 * Starts the node of `mode` on its own copy of the built chain; `undefined` when the mode is
 * skipped (no redis-server).
 */
async function startMode(mode, ctx) {
  const result = { mode, windows: {} };
  const extraArgs = [];
  let path = "/";
  if (mode !== "local") {
    // The hosted mode's key is in a registry of its own, given as --api-key-file: a key in the
    // chain's datadir would make the local mode's node hosted too.
    if (mode === "hosted") {
      ctx.key ??= createKey();
      extraArgs.push("--api-key-file", join(keysDir, "api-keys.json"));
    }
    extraArgs.push("--rpc-hosted", "on");
    path = `/${mode === "redis" ? ctx.redisKey : ctx.key}`;
  }
  if (mode === "redis") {
    if (ctx.redis.skipped) {
      result.skipped = ctx.redis.skipped;
      log(`  ${mode}: skipped: ${result.skipped}`);
      return { result };
    }
    extraArgs.push("--redis", `redis://127.0.0.1:${ctx.redis.port}`);
    result.redis = ctx.redis.version;
  }
  const id = `nodex-${mode}`;
  cpSync(datadir, join(tmp, `${id}-datadir`), { recursive: true });
  const server = { ...nodexServer({ id, extraArgs }), path };
  const port = await freePort();
  log(`  ${mode}:`);
  const handle = await launchServer(server, result, {
    port,
    tmp,
    logFile: join(tmp, `${mode}.log`),
  });
  if (handle === undefined || result.skipped) return { result };
  // Redis works for the node in the redis mode: its CPU counts as the node's.
  if (mode === "redis") handle.helperPids = [ctx.redis.child.pid];
  return { result, handle, port, path, workloads: new Map() };
}

/**
 * One window of workload `w` on a running mode's node; the node's workload keeps its cursor, so
 * that each window goes on through the varied bodies where the last one stopped.
 */
async function measureWindow(node, w, ctx, loadOf) {
  const expected = ctx.expected.get(w.id);
  let workload = node.workloads.get(w.id);
  if (workload === undefined) {
    workload = {
      calls: 1,
      path: node.path,
      ...(w.bodies ? { bodies: w.bodies, expected } : { body: w.body }),
    };
    node.workloads.set(w.id, workload);
  }
  const expectBody = w.bodies ? undefined : [...expected][0];
  return measure(node.handle, node.port, workload, expectBody, loadOf);
}

// ---------------------------------------------------------------------------------------------

const started = new Date();
log(
  `bench/hosted: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}, ${load.connections} connections, ${ROUNDS} windows of ${load.duration} s per mode and workload (after ${load.warmup} s)`,
);
log(`building the chain: a token and ${BLOCKS} transfer blocks`);
const builder = nodexServer({ id: "nodex" });
const buildPort = await freePort();
const buildRun = {};
const buildHandle = await launchServer(builder, buildRun, {
  port: buildPort,
  tmp,
  logFile: join(tmp, "build.log"),
});
if (buildHandle === undefined || buildRun.skipped) process.exit(1);
let chain;
const ctx = { expected: new Map() };
try {
  chain = await buildChain(buildPort);
  ctx.workloads = workloads(chain);
  for (const w of ctx.workloads) ctx.expected.set(w.id, await expectedAnswers(buildPort, w));
} finally {
  await stopChild(buildHandle);
}
log(`  head ${chain.head}, token ${chain.address}`);
ctx.redis = modes.includes("redis") ? await startRedis() : { skipped: "not asked for" };
if (!ctx.redis.skipped) ctx.redisKey = createKey(`redis://127.0.0.1:${ctx.redis.port}`);

const fmtCosts = (costs) =>
  costs.length === 0
    ? "n/a"
    : `${median(costs).toFixed(1)} % (${costs.map((c) => c.toFixed(0)).join(", ")})`;
const fmtCPU = (us) => (us === undefined ? "n/a" : us.toFixed(0));
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length === 0 ? undefined : v[Math.floor((v.length - 1) / 2)];
};
// Every mode's node runs at once, each on its own copy of the chain; the workloads are measured
// in short windows that go round the modes, the first mode of each round turning, so that a
// slow spell of the machine falls on every mode alike and each mode's cost is taken against
// the local window beside it.
log("starting the nodes");
const nodes = new Map();
for (const mode of modes) {
  const node = await startMode(mode, ctx);
  if (node.handle !== undefined) nodes.set(mode, node);
}
const running = modes.filter((m) => nodes.has(m));
if (!nodes.has("local")) throw new Error("the local node did not start");
const rounds = Array.from({ length: ROUNDS }, () =>
  running.map((mode) => ({ mode, workloads: {} })),
);
try {
  for (const w of ctx.workloads) {
    log(`${w.label}:`);
    if (load.warmup > 0)
      for (const mode of running)
        await measureWindow(nodes.get(mode), w, ctx, { ...load, duration: load.warmup, warmup: 0 });
    for (let r = 0; r < ROUNDS; r++) {
      const order = running.map((_, i) => running[(i + r) % running.length]);
      for (const mode of order) {
        const m = await measureWindow(nodes.get(mode), w, ctx, { ...load, warmup: 0 });
        rounds[r].find((x) => x.mode === mode).workloads[w.id] = m;
        const bad = m.non2xx + m.errors + m.timeouts + m.mismatches;
        if (bad > 0) log(`  ${mode}: ${bad} wrong or failed answers in window ${r + 1}`);
      }
    }
    const line = running.map((mode) => {
      const ms = rounds.map((round) => round.find((x) => x.mode === mode).workloads[w.id]);
      const rate = median(ms.map((m) => m.reqPerSec));
      const cpu = median(ms.map((m) => m.serverCPU?.usPerRequest).filter((c) => c != null));
      return `${mode} ${fmtK(rate)} req/s, ${fmtCPU(cpu)} µs CPU/req`;
    });
    log(`  ${line.join("; ")}`);
  }
} finally {
  for (const node of nodes.values()) await stopChild(node.handle);
}
/**
 * A mode's cost against the local mode, round by round, in percent of the local figure:
 * `sign` -1 for a figure where less is worse (throughput), 1 where more is worse (CPU).
 */
function roundCosts(rounds, mode, id, figure, sign) {
  return rounds
    .map((round) => {
      const m = round.find((r) => r.mode === mode)?.workloads[id];
      const ref = round.find((r) => r.mode === "local")?.workloads[id];
      const a = m === undefined ? undefined : figure(m);
      const b = ref === undefined ? undefined : figure(ref);
      return a == null || b == null || b === 0 ? undefined : (sign * (a - b) * 100) / b;
    })
    .filter((c) => c !== undefined);
}
if (ctx.redis.child) ctx.redis.child.kill("SIGTERM");

// The table: each workload's medians per mode over the rounds, and the median over the rounds of
// each mode's throughput cost against the local mode of the same round.
const rows = [];
for (const w of ctx.workloads) {
  for (const mode of modes) {
    const runs = rounds.map((round) => round.find((r) => r.mode === mode)?.workloads[w.id]);
    const measured = runs.filter((m) => m !== undefined);
    if (measured.length === 0) continue;
    // Each round's cost against the local mode of the same round, in throughput and in CPU per
    // request (the node's, and Redis's in the redis mode): CPU per request moves far less with
    // the machine's other load than throughput does.
    const costs = roundCosts(rounds, mode, w.id, (m) => m.reqPerSec, -1);
    const cpuCosts = roundCosts(rounds, mode, w.id, (m) => m.serverCPU?.usPerRequest, 1);
    rows.push([
      w.label,
      mode,
      fmtInt(Math.round(median(measured.map((m) => m.reqPerSec)))),
      fmtMs(median(measured.map((m) => m.latencyMs.p50))),
      fmtMs(median(measured.map((m) => m.latencyMs.p99))),
      fmtCPU(median(measured.map((m) => m.serverCPU?.usPerRequest).filter((c) => c != null))),
      mode === "local" ? "—" : fmtCosts(costs),
      mode === "local" ? "—" : fmtCosts(cpuCosts),
    ]);
  }
}
log("");
log(
  table(
    [
      "workload",
      "mode",
      "req/s",
      "p50",
      "p99",
      "CPU µs/req",
      "throughput cost (each round)",
      "CPU cost (each round)",
    ],
    rows,
    ["l", "l", "r", "r", "r", "r", "r", "r"],
  ),
);
const out = join(
  root,
  "bench/results",
  `hosted-${started.toISOString().replace(/[:.]/g, "-")}.json`,
);
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      bench: "hosted",
      started: started.toISOString(),
      commit: gitCommit(root),
      node: process.version,
      cores: cpus().length,
      load,
      blocks: BLOCKS,
      rounds,
    },
    null,
    2,
  )}\n`,
);
log(`results: ${relative(root, out)}`);
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
