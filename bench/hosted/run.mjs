#!/usr/bin/env node
// Hosted bench: what serving many users costs. The same chain (a token and --blocks blocks of
// transfers, one block in two with a log for the queried recipient) is served by Nodex in three
// modes, one after another on the same datadir, in one run:
//   local   no keys, no limits (the reference);
//   hosted  --rpc-hosted with one API key (created with `nodex keys create`) whose rate and
//           daily quota are high enough never to refuse, so every request is checked, weighed
//           and counted but none is refused;
//   redis   the same with --redis: what the replicas of an endpoint share goes through Redis
//           (Debian's redis-server, started here on 127.0.0.1).
// Workloads, each with autocannon over keep-alive connections: eth_blockNumber; eth_call of
// balanceOf for varied holders; eth_getLogs by address and topic over varied windows of 100
// blocks near the head. Prints requests per second, the median and the 99th percentile of each,
// and each mode's overhead against local in percent; writes bench/results/hosted-<ts>.json.
//
//   node bench/hosted/run.mjs                                (from the repo root; ~2 min)
//   node bench/hosted/run.mjs --duration 5 --only local,hosted
//
// See bench/README.md (bench/hosted) for what it measures and how to read the output.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  --duration S     seconds measured per mode and workload (default 8)
  --warmup S       seconds of unmeasured load before each measurement (default 2)
  --connections N  concurrent keep-alive connections (default 32)
  --blocks N       transfer blocks of the chain (default 1000)
  --rounds R       rounds of every mode in turn (default 3); each mode's cost is the median of
                   its ratio to the local mode of the same round
  --only a,b       modes: local, hosted, redis (default all; local is the reference)
  --build          run npm run build even if apps/node/dist/main.js exists`;

const { values: args } = parseArgs({
  options: {
    duration: { type: "string", default: "8" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    blocks: { type: "string", default: "1000" },
    rounds: { type: "string", default: "3" },
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

async function runMode(mode, ctx) {
  const result = { mode, workloads: {} };
  log(`${mode}:`);
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
      log(`  skipped: ${result.skipped}`);
      return result;
    }
    extraArgs.push("--redis", `redis://127.0.0.1:${ctx.redis.port}`);
    result.redis = ctx.redis.version;
  }
  const server = { ...nodexServer({ id: "nodex", extraArgs }), path };
  const port = await freePort();
  const handle = await launchServer(server, result, {
    port,
    tmp,
    logFile: join(tmp, `${mode}.log`),
  });
  if (handle === undefined || result.skipped) return result;
  try {
    for (const w of ctx.workloads) {
      const expected = ctx.expected.get(w.id);
      const workload = {
        calls: 1,
        path,
        ...(w.bodies ? { bodies: w.bodies, expected } : { body: w.body }),
      };
      const expectBody = w.bodies ? undefined : [...expected][0];
      const m = await measure(handle, port, workload, expectBody, load);
      result.workloads[w.id] = m;
      const bad = m.non2xx + m.errors + m.timeouts + m.mismatches;
      log(
        `  ${w.label}: ${fmtK(m.reqPerSec)} req/s, p50 ${fmtMs(m.latencyMs.p50)}, p99 ${fmtMs(m.latencyMs.p99)}${bad > 0 ? `; ${bad} wrong or failed answers` : ""}`,
      );
    }
  } finally {
    await stopChild(handle);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

const started = new Date();
log(
  `bench/hosted: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}, ${load.connections} connections, ${load.duration} s per figure (after ${load.warmup} s)`,
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

// Rounds of every mode in turn, so that a slow spell of the machine falls on every mode alike.
const rounds = [];
for (let r = 1; r <= ROUNDS; r++) {
  log(`round ${r} of ${ROUNDS}`);
  const round = [];
  for (const mode of modes) round.push(await runMode(mode, ctx));
  rounds.push(round);
}
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length === 0 ? undefined : v[Math.floor((v.length - 1) / 2)];
};
if (ctx.redis.child) ctx.redis.child.kill("SIGTERM");

// The table: each workload's medians per mode over the rounds, and the median over the rounds of
// each mode's throughput cost against the local mode of the same round.
const rows = [];
for (const w of ctx.workloads) {
  for (const mode of modes) {
    const runs = rounds.map((round) => round.find((r) => r.mode === mode)?.workloads[w.id]);
    const measured = runs.filter((m) => m !== undefined);
    if (measured.length === 0) continue;
    const costs = rounds
      .map((round) => {
        const m = round.find((r) => r.mode === mode)?.workloads[w.id];
        const ref = round.find((r) => r.mode === "local")?.workloads[w.id];
        return m === undefined || ref === undefined
          ? undefined
          : ((ref.reqPerSec - m.reqPerSec) / ref.reqPerSec) * 100;
      })
      .filter((c) => c !== undefined);
    rows.push([
      w.label,
      mode,
      fmtInt(Math.round(median(measured.map((m) => m.reqPerSec)))),
      fmtMs(median(measured.map((m) => m.latencyMs.p50))),
      fmtMs(median(measured.map((m) => m.latencyMs.p99))),
      mode === "local"
        ? "—"
        : `${median(costs).toFixed(1)} % (${costs.map((c) => c.toFixed(0)).join(", ")})`,
    ]);
  }
}
log("");
log(
  table(["workload", "mode", "req/s", "p50", "p99", "cost vs local (each round)"], rows, [
    "l",
    "l",
    "r",
    "r",
    "r",
    "r",
  ]),
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
