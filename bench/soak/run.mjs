#!/usr/bin/env node
// Soak bench: memory under a long mixed load, against Nodex (regtest), Anvil and Hardhat's node,
// one node at a time, in one run. On each node: signed transfers and ERC-20 transfers (which
// emit logs) at a fixed rate, reads (balances, blocks, receipts), eth_call, eth_getLogs over the
// whole chain, filters, and WebSocket subscriptions (newHeads and logs kept open, more opened
// and closed all the time), for --minutes; then --idle seconds with no load. The node's RSS
// (/proc/<pid>/status) is sampled every --sample seconds, with its JS heap for the Node servers
// (a probe loaded with NODE_OPTIONS, memoryProbe.mjs). Prints the samples, then per node the
// mean of the middle and the last third of the load and a verdict: flat after warm-up, or
// growing.
//
//   node bench/soak/run.mjs                         (from the repo root: ~35 min)
//   node bench/soak/run.mjs --minutes 2 --only nodex
//   node bench/soak/run.mjs --only nodex --gc --heap-snapshots
//
// See bench/README.md for what it measures and how to read the output.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import {
  ACCOUNT0,
  compileToken,
  GAS_DEPLOY,
  GAS_TOKEN_TRANSFER,
  GAS_TRANSFER,
  hex,
  loadEthers,
  sign,
  TOKEN_SUPPLY,
  TRANSFER_TOPIC,
  waitMined,
  word,
} from "../lib/eth.mjs";
import { fmtInt, fmtMs, log, readTail, sleep, table } from "../lib/format.mjs";
import { freePort, LeanRPCClient, RPCClient } from "../lib/http.mjs";
import { cpuWindow, Latencies } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { anvilPeer, hardhatPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import {
  benchDir,
  ensureBenchDeps,
  ensureNodexBuilt,
  gitCommit,
  packageJSON,
  root,
} from "../lib/setup.mjs";

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/soak/run.mjs [--minutes N] [--idle S] [--sample S] [--tx-rate N] [--read-rate N] [--call-rate N] [--logs-rate N] [--filter-rate N] [--subscribers N] [--churn-rate N] [--gc] [--heap-snapshots] [--nodex-args="..."] [--only a,b] [--build] [--list]

  --minutes N       minutes of mixed load per node (default 10)
  --idle S          seconds sampled after the load stops and every connection is closed (default 30)
  --sample S        seconds between two memory samples (default 5)
  --tx-rate N       transactions sent per second, half plain transfers, half ERC-20 transfers (default 20)
  --read-rate N     eth_getBalance, eth_getBlockByNumber and eth_getTransactionReceipt per second (default 200)
  --call-rate N     eth_call (the token's balanceOf, at the head or an older block) per second (default 50)
  --logs-rate N     eth_getLogs per second, most over the whole chain (default 2)
  --filter-rate N   eth_newFilter + eth_getFilterChanges (+ eth_uninstallFilter, one in ten left behind) per second (default 0.5)
  --subscribers N   WebSocket connections kept open, each with a newHeads and a logs subscription (default 20)
  --churn-rate N    WebSocket connections opened per second, subscribed, and closed (default 2)
  --gc              the probe collects garbage before each heap reading (live heap; Node servers only)
  --heap-snapshots  Nodex writes a heap snapshot (SIGUSR2) after the warm-up, at the end of the load
                    and at the end of the idle time, into bench/results/soak-<time>/
  --nodex-args="…"  more options for Nodex, split at spaces (e.g. --nodex-args="--cache-trie-nodes 1000"; the = is needed)
  --only a,b        run only these nodes (ids from --list); nodex is the reference
  --build           run \`npm run build\` first even if apps/node/dist/main.js exists
  --list            print the node ids and exit
`;

let args;
try {
  args = parseArgs({
    options: {
      minutes: { type: "string", default: "10" },
      idle: { type: "string", default: "30" },
      sample: { type: "string", default: "5" },
      "tx-rate": { type: "string", default: "20" },
      "read-rate": { type: "string", default: "200" },
      "call-rate": { type: "string", default: "50" },
      "logs-rate": { type: "string", default: "2" },
      "filter-rate": { type: "string", default: "0.5" },
      subscribers: { type: "string", default: "20" },
      "churn-rate": { type: "string", default: "2" },
      gc: { type: "boolean", default: false },
      "heap-snapshots": { type: "boolean", default: false },
      "nodex-args": { type: "string", default: "" },
      only: { type: "string" },
      build: { type: "boolean", default: false },
      list: { type: "boolean", default: false },
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
  minutes: positiveNumber("--minutes", args.minutes),
  idle: nonNegativeNumber("--idle", args.idle),
  sample: positiveNumber("--sample", args.sample),
  txRate: positiveNumber("--tx-rate", args["tx-rate"]),
  readRate: positiveNumber("--read-rate", args["read-rate"]),
  callRate: positiveNumber("--call-rate", args["call-rate"]),
  logsRate: positiveNumber("--logs-rate", args["logs-rate"]),
  filterRate: positiveNumber("--filter-rate", args["filter-rate"]),
  subscribers: nonNegativeNumber("--subscribers", args.subscribers),
  churnRate: positiveNumber("--churn-rate", args["churn-rate"]),
  gc: args.gc,
  heapSnapshots: args["heap-snapshots"],
  nodexArgs: args["nodex-args"].split(" ").filter(Boolean),
};
if (!Number.isInteger(opts.subscribers)) usage("--subscribers must be a whole number");

function positiveNumber(flag, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    usage(`${flag} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}
function nonNegativeNumber(flag, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0)
    usage(`${flag} must be a number, 0 or more, got ${JSON.stringify(text)}`);
  return n;
}
function usage(message) {
  process.stderr.write(`${message}\n${USAGE}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Nodes

/** `probe`: a Node process, whose heap the probe can read. */
const NODES = [
  { ...nodexServer({ extraArgs: opts.nodexArgs }), probe: true },
  { ...anvilPeer(), probe: false },
  { ...hardhatPeer(), probe: true },
];

if (args.list) {
  for (const s of NODES) process.stdout.write(`${s.id.padEnd(10)} ${s.label} [${s.kind}]\n`);
  process.exit(0);
}
const selected =
  args.only === undefined
    ? NODES
    : (() => {
        const wanted = args.only
          .split(",")
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean);
        const known = NODES.map((s) => s.id);
        const unknown = wanted.filter((w) => !known.includes(w));
        if (unknown.length > 0)
          usage(`unknown id(s) in --only: ${unknown.join(", ")} (known: ${known.join(", ")})`);
        return NODES.filter((s) => wanted.includes(s.id));
      })();

const PROBE = join(benchDir, "soak", "memoryProbe.mjs");

/**
 * `server` with the memory probe in its NODE_OPTIONS (Node servers), writing to `memoryFile`;
 * Nodex also with SIGUSR2 writing a heap snapshot into `snapshotDir` when one is given.
 */
function withProbe(server, memoryFile, snapshotDir) {
  if (!server.probe) return server;
  return {
    ...server,
    prepare(port, tmp) {
      const spec = server.prepare(port, tmp);
      const nodeOptions = [process.env.NODE_OPTIONS ?? "", `--import=${pathToFileURL(PROBE).href}`];
      if (snapshotDir)
        nodeOptions.push("--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${snapshotDir}`);
      return {
        ...spec,
        env: {
          ...spec.env,
          NODE_OPTIONS: nodeOptions.join(" ").trim(),
          SOAK_MEMORY_FILE: memoryFile,
          SOAK_MEMORY_EVERY_MS: String(opts.sample * 1000),
          ...(opts.gc ? { SOAK_MEMORY_GC: "1" } : {}),
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Memory readings

/**
 * VmRSS, VmHWM, and RSS's two parts of `pid` in bytes (Linux /proc), or undefined: RssAnon is
 * the memory the process owns (heaps, stacks, malloc), RssFile the pages of mapped files it has
 * touched (its binary, and LevelDB's table files, which LevelDB maps into memory: page cache
 * the kernel takes back under pressure, growing with the database, not with the process).
 */
function procMemory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kB = (name) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    return { rss: kB("VmRSS"), hwm: kB("VmHWM"), anon: kB("RssAnon"), file: kB("RssFile") };
  } catch {
    return undefined;
  }
}

/**
 * The probe's last readings for `pid` in `file`, summed over its threads (the main thread and
 * any worker thread that wrote within the last three sample intervals), or undefined.
 */
function probeReading(file, pid) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const latest = new Map();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const r = JSON.parse(line);
      if (r.pid === pid) latest.set(r.thread ?? 0, r);
    } catch {}
  }
  if (latest.size === 0) return undefined;
  const newest = Math.max(...[...latest.values()].map((r) => r.t));
  const live = [...latest.values()].filter((r) => newest - r.t <= 3 * opts.sample * 1000);
  const sum = (key) => live.reduce((s, r) => s + (r[key] ?? 0), 0);
  return {
    heapUsed: sum("heapUsed"),
    heapTotal: sum("heapTotal"),
    external: sum("external"),
    arrayBuffers: sum("arrayBuffers"),
    mainHeapUsed: latest.get(0)?.heapUsed ?? null,
    threads: live.length,
  };
}

const MB = 1024 * 1024;
const mb = (bytes) => (bytes === undefined || bytes === null ? "—" : (bytes / MB).toFixed(1));

// ---------------------------------------------------------------------------------------------
// The chain side

/** Recipients of the transfers, in turn (fresh addresses: state stays the same size). */
const RECIPIENTS = Array.from(
  { length: 256 },
  (_, i) => `0x${(0x50a000 + i).toString(16).padStart(40, "0")}`,
);
/** One ERC-20 transfer in RARE_EVERY goes here: the topic eth_getLogs looks for over the chain. */
const RARE_TO = "0x000000000000000000000000000000000050a1ff";
const RARE_EVERY = 50;

let token;
let tmp;
const cleanupSync = installCleanup(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Chain id, gas price, nonce; deploys the token. */
async function prepareChain(rpc) {
  const chainId = BigInt(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "pending"]));
  const balance = BigInt(await rpc.call("eth_getBalance", [ACCOUNT0, "latest"]));
  const sends = Math.ceil(opts.txRate * opts.minutes * 60) + 10;
  const need = gasPrice * (GAS_DEPLOY + BigInt(sends) * GAS_TOKEN_TRANSFER) + BigInt(sends);
  if (balance < need)
    throw new Error(`account #0 holds ${balance} wei, the run needs ${need} (is it funded?)`);
  const deploy = sign({
    chainId,
    nonce,
    gasPrice,
    gasLimit: GAS_DEPLOY,
    to: null,
    data: token.bytecode + token.iface.encodeDeploy([TOKEN_SUPPLY]).slice(2),
  });
  const sent = await rpc.call("eth_sendRawTransaction", [deploy.raw]);
  if (String(sent).toLowerCase() !== deploy.hash)
    throw new Error(`eth_sendRawTransaction answered ${sent}, expected ${deploy.hash}`);
  const receipt = await waitMined(rpc, deploy.hash, 10_000);
  if (!receipt) throw new Error("the deployment was not mined within 10 s: no automine?");
  if (receipt.status !== "0x1")
    throw new Error(`the deployment failed: ${JSON.stringify(receipt)}`);
  return {
    chainId,
    gasPrice,
    nonce: nonce + 1,
    token: receipt.contractAddress.toLowerCase(),
    deployBlock: Number(receipt.blockNumber),
    head: Number(receipt.blockNumber),
    /** Hashes of the transactions sent, for receipt reads (the bench keeps the last 20,000). */
    hashes: [deploy.hash],
    sent: 0,
    rareSent: 0,
  };
}

const pick = (list) => list[Math.floor(Math.random() * list.length)];
const randomInt = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo + 1));

/** One send: a plain transfer or an ERC-20 transfer (one in RARE_EVERY of those to RARE_TO). */
async function sendOne(client, ctx) {
  const i = ctx.sent++;
  let tx;
  if (i % 2 === 0) {
    tx = {
      to: pick(RECIPIENTS),
      value: 1n,
      gasLimit: GAS_TRANSFER,
    };
  } else {
    const rare = ((i - 1) / 2) % RARE_EVERY === RARE_EVERY - 1;
    if (rare) ctx.rareSent++;
    tx = {
      to: ctx.token,
      gasLimit: GAS_TOKEN_TRANSFER,
      data: token.iface.encodeFunctionData("transfer", [rare ? RARE_TO : pick(RECIPIENTS), 1n]),
    };
  }
  const signed = sign({ chainId: ctx.chainId, nonce: ctx.nonce, gasPrice: ctx.gasPrice, ...tx });
  try {
    const hash = await client.call("eth_sendRawTransaction", [signed.raw]);
    if (String(hash).toLowerCase() !== signed.hash)
      throw new Error(`eth_sendRawTransaction answered ${hash}, expected ${signed.hash}`);
  } catch (err) {
    // The nonce may or may not have been taken: ask the node.
    ctx.nonce = Number(await client.call("eth_getTransactionCount", [ACCOUNT0, "pending"]));
    throw err;
  }
  ctx.nonce++;
  ctx.hashes.push(signed.hash);
  if (ctx.hashes.length > 40_000) ctx.hashes.splice(0, 20_000);
}

/** One read: a balance, a block (with or without its transactions) or a receipt. */
async function readOne(client, ctx) {
  const r = Math.random();
  if (r < 0.34) {
    const balance = await client.call("eth_getBalance", [pick(RECIPIENTS), "latest"]);
    if (typeof balance !== "string") throw new Error(`eth_getBalance answered ${balance}`);
  } else if (r < 0.67) {
    const n = randomInt(0, ctx.head);
    const block = await client.call("eth_getBlockByNumber", [hex(n), Math.random() < 0.5]);
    if (!block || Number(block.number) !== n) throw new Error(`no block ${n}`);
  } else {
    // Not the newest few: they may still be waiting for their block.
    const hashes = ctx.hashes;
    const hash = hashes[Math.floor(Math.random() * Math.max(1, hashes.length - 20))];
    const receipt = await client.call("eth_getTransactionReceipt", [hash]);
    if (!receipt || receipt.transactionHash !== hash) throw new Error(`no receipt for ${hash}`);
  }
}

/** One eth_call of the token's balanceOf: at the head, or (one in four) at an older block. */
async function callOne(client, ctx) {
  const data = token.iface.encodeFunctionData("balanceOf", [pick(RECIPIENTS)]);
  const at = Math.random() < 0.25 ? hex(randomInt(ctx.deployBlock, ctx.head)) : "latest";
  const out = await client.call("eth_call", [{ to: ctx.token, data }, at]);
  if (typeof out !== "string" || out.length !== 66) throw new Error(`eth_call answered ${out}`);
}

/**
 * One eth_getLogs, in turn: the rare recipient's Transfer logs over the whole chain by the
 * token's address and without it; one recipient's over the whole chain; the token's logs of
 * the last 1,000 blocks.
 */
async function logsOne(client, ctx) {
  const kind = ctx.logsQueries++ % 4;
  const rareTopics = [TRANSFER_TOPIC, null, word(RARE_TO)];
  const filter =
    kind === 0
      ? { fromBlock: "0x0", toBlock: "latest", address: ctx.token, topics: rareTopics }
      : kind === 1
        ? { fromBlock: "0x0", toBlock: "latest", topics: rareTopics }
        : kind === 2
          ? {
              fromBlock: "earliest",
              toBlock: "latest",
              address: ctx.token,
              topics: [TRANSFER_TOPIC, null, word(pick(RECIPIENTS))],
            }
          : { fromBlock: hex(Math.max(0, ctx.head - 1000)), toBlock: "latest", address: ctx.token };
  const rareBefore = ctx.rareMined;
  const logs = await client.call("eth_getLogs", [filter]);
  if (!Array.isArray(logs)) throw new Error(`eth_getLogs answered ${JSON.stringify(logs)}`);
  if (kind < 2 && logs.length < rareBefore)
    throw new Error(`eth_getLogs found ${logs.length} rare logs, ${rareBefore} were mined`);
  if (kind < 2) ctx.rareMined = Math.max(ctx.rareMined, logs.length);
}

/** eth_newFilter on the token, one poll, then eth_uninstallFilter, except one in ten. */
async function filterOne(client, ctx) {
  const id = await client.call("eth_newFilter", [{ address: ctx.token }]);
  if (typeof id !== "string") throw new Error(`eth_newFilter answered ${id}`);
  const changes = await client.call("eth_getFilterChanges", [id]);
  if (!Array.isArray(changes)) throw new Error(`eth_getFilterChanges answered ${changes}`);
  if (ctx.filters++ % 10 === 9) {
    ctx.filtersLeft++;
    return;
  }
  if ((await client.call("eth_uninstallFilter", [id])) !== true)
    throw new Error(`eth_uninstallFilter of ${id} did not answer true`);
}

/**
 * Runs `op(client, ctx)` `rate` times a second over `workers` connections (each one request at
 * a time) until `until` (performance.now()); when the node cannot keep up, the workers run
 * back to back and the schedule moves on (no burst to catch up). Counts into `stat`.
 */
async function paced(port, stat, rate, workers, until, op, ctx, stop) {
  let base = performance.now();
  let k = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      const client = await LeanRPCClient.open(port);
      try {
        for (;;) {
          if (stop.now) break;
          const at = base + (k++ * 1000) / rate;
          if (at >= until) break;
          const wait = at - performance.now();
          if (wait > 0) await sleep(wait);
          else if (wait < -1000) {
            base -= wait;
            stat.late++;
          }
          if (stop.now) break;
          const t0 = performance.now();
          try {
            await op(client, ctx);
            stat.ok++;
            stat.latencies.push(performance.now() - t0);
          } catch (err) {
            stat.errors++;
            const m = String(err?.message ?? err).slice(0, 160);
            if (stat.messages.length < 5 && !stat.messages.includes(m)) stat.messages.push(m);
          }
        }
      } finally {
        client.close();
      }
    }),
  );
}

function newStat() {
  return { ok: 0, errors: 0, late: 0, messages: [], latencies: new Latencies() };
}

// ---------------------------------------------------------------------------------------------
// WebSocket

let WebSocket;

/** One WebSocket to ws://127.0.0.1:port; rejects with why the upgrade failed. */
function openSocket(port, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, {
      perMessageDeflate: false,
      handshakeTimeout: timeoutMs,
    });
    ws.once("open", () => {
      ws.removeAllListeners("error");
      ws.on("error", () => {});
      resolve(ws);
    });
    ws.once("unexpected-response", (req, res) => {
      req.destroy();
      reject(new Error(`the upgrade got HTTP ${res.statusCode}`));
    });
    ws.once("error", (err) => reject(new Error(`the upgrade failed: ${err.message}`)));
  });
}

/**
 * eth_subscribe newHeads and logs (of the token) on `ws`; then counts its notifications into
 * `counts` ({heads, logs}). Resolves with the two subscription ids.
 */
function subscribeBoth(ws, tokenAddress, counts, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const ids = {};
    const timer = setTimeout(
      () => reject(new Error(`no answer to eth_subscribe within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    ws.on("message", (data) => {
      const text = String(data);
      if (ids.heads !== undefined && ids.logs !== undefined) {
        if (text.includes(ids.heads)) counts.heads++;
        else if (text.includes(ids.logs)) counts.logs++;
        return;
      }
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        clearTimeout(timer);
        return reject(new Error(`eth_subscribe answered non-JSON: ${text.slice(0, 160)}`));
      }
      if (json.method === "eth_subscription") return;
      if (json.error || typeof json.result !== "string") {
        clearTimeout(timer);
        return reject(new Error(`eth_subscribe answered ${text.slice(0, 160)}`));
      }
      if (json.id === 1) ids.heads = json.result;
      if (json.id === 2) ids.logs = json.result;
      if (ids.heads !== undefined && ids.logs !== undefined) {
        clearTimeout(timer);
        resolve(ids);
      }
    });
    ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
    ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "eth_subscribe",
        params: ["logs", { address: tokenAddress }],
      }),
    );
  });
}

/** Sends eth_unsubscribe for `id` and waits for the answer (true). */
function unsubscribe(ws, id, rpcId, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no answer to eth_unsubscribe")), timeoutMs);
    const onMessage = (data) => {
      const text = String(data);
      if (!text.includes(`"id":${rpcId}`)) return;
      clearTimeout(timer);
      ws.off("message", onMessage);
      const json = JSON.parse(text);
      if (json.result === true) resolve();
      else reject(new Error(`eth_unsubscribe answered ${text.slice(0, 160)}`));
    };
    ws.on("message", onMessage);
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: rpcId, method: "eth_unsubscribe", params: [id] }));
  });
}

/**
 * One short-lived connection: opened, subscribed to newHeads and logs, kept ~1.5 s, then in
 * turn unsubscribed and closed, closed with the subscriptions, or dropped without a close frame.
 */
async function churnOne(port, ctx) {
  const ws = await openSocket(port);
  try {
    const ids = await subscribeBoth(ws, ctx.token, ctx.churnCounts);
    await sleep(1500);
    const how = ctx.churned++ % 3;
    if (how === 0) {
      await unsubscribe(ws, ids.heads, 3);
      await unsubscribe(ws, ids.logs, 4);
      ws.close();
    } else if (how === 1) ws.close();
    else ws.terminate();
  } catch (err) {
    ws.terminate();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// One node

async function benchNode(server, run, stamp) {
  const port = await freePort();
  const memoryFile = join(tmp, `${server.id}-memory.jsonl`);
  const snapshotDir =
    opts.heapSnapshots && server.kind === "nodex"
      ? join(benchDir, "results", `soak-${stamp}`)
      : undefined;
  if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
  const logFile = join(tmp, `${server.id}.log`);
  const handle = await launchServer(withProbe(server, memoryFile, snapshotDir), run, {
    port,
    tmp,
    logFile,
  });
  if (!handle || run.skipped) {
    await stopChild(handle);
    return;
  }
  const rpc = new RPCClient(port);
  const sockets = [];
  const stop = { now: false };
  try {
    const ctx = await prepareChain(rpc);
    Object.assign(ctx, {
      logsQueries: 0,
      rareMined: 0,
      filters: 0,
      filtersLeft: 0,
      churned: 0,
      counts: { heads: 0, logs: 0 },
      churnCounts: { heads: 0, logs: 0 },
    });
    run.chain = { chainId: hex(ctx.chainId), token: ctx.token };
    log(`  token at ${ctx.token}; memory after set-up: RSS ${mb(procMemory(handle.pid)?.rss)} MB`);

    // Connections kept open for the whole load.
    for (let i = 0; i < opts.subscribers; i++) {
      const ws = await openSocket(port);
      sockets.push(ws);
      await subscribeBoth(ws, ctx.token, ctx.counts);
    }

    const stats = {
      send: newStat(),
      read: newStat(),
      call: newStat(),
      logs: newStat(),
      filter: newStat(),
      churn: newStat(),
    };
    run.stats = stats;
    const samples = [];
    run.samples = samples;
    const loadMs = opts.minutes * 60_000;
    const t0 = performance.now();
    const until = t0 + loadMs;
    const snapshots = [];
    /**
     * Asks Nodex for a heap snapshot; resolves once the file is whole (its size has not changed
     * for 2 s), at most 3 minutes later. Nodex stops while it writes one.
     */
    const snapshot = async (label) => {
      if (!snapshotDir) return;
      const count = snapshots.length + 1;
      try {
        process.kill(handle.pid, "SIGUSR2");
      } catch {
        return;
      }
      log(`  heap snapshot requested (${label})`);
      const entry = { label, at: (performance.now() - t0) / 1000, file: null };
      snapshots.push(entry);
      const deadline = Date.now() + 180_000;
      let last = -1;
      let stableSince = Date.now();
      while (Date.now() < deadline) {
        await sleep(500);
        const files = readdirSync(snapshotDir)
          .filter((f) => f.endsWith(".heapsnapshot"))
          .sort();
        if (files.length < count) continue;
        const file = join(snapshotDir, files[count - 1]);
        const size = statSync(file).size;
        if (size !== last || size === 0) {
          last = size;
          stableSince = Date.now();
        } else if (Date.now() - stableSince >= 2000) {
          entry.file = relative(root, file);
          log(`  heap snapshot written: ${entry.file} (${mb(size)} MB)`);
          return;
        }
      }
      log(`  heap snapshot not written whole within 3 min (${label})`);
    };
    run.snapshots = snapshots;

    let phase = "load";
    const headClient = new RPCClient(port);
    const takeSample = async () => {
      const t = (performance.now() - t0) / 1000;
      const m = procMemory(handle.pid);
      const p = server.probe ? probeReading(memoryFile, handle.pid) : undefined;
      let head = ctx.head;
      try {
        head = Number(await headClient.call("eth_blockNumber", [], 10_000));
        ctx.head = Math.max(ctx.head, head);
      } catch {}
      const requests = Object.values(stats).reduce((s, x) => s + x.ok + x.errors, 0);
      const sample = {
        t,
        phase,
        rss: m?.rss ?? null,
        hwm: m?.hwm ?? null,
        rssAnon: m?.anon ?? null,
        rssFile: m?.file ?? null,
        heapUsed: p?.heapUsed ?? null,
        heapTotal: p?.heapTotal ?? null,
        external: p?.external ?? null,
        arrayBuffers: p?.arrayBuffers ?? null,
        mainHeapUsed: p?.mainHeapUsed ?? null,
        threads: p?.threads ?? null,
        head,
        requests,
        notifications: ctx.counts.heads + ctx.counts.logs,
      };
      samples.push(sample);
      log(
        `  ${t.toFixed(0).padStart(5)} s  ${phase.padEnd(4)}  RSS ${mb(sample.rss).padStart(6)} MB (anon ${mb(sample.rssAnon).padStart(6)}, files ${mb(sample.rssFile).padStart(5)})` +
          (server.probe
            ? `  heap ${mb(sample.heapUsed).padStart(6)} / ${mb(sample.heapTotal).padStart(6)} MB (${sample.threads ?? 0} thr., main ${mb(sample.mainHeapUsed)})  external ${mb(sample.external).padStart(6)} MB`
            : "") +
          `  head ${fmtInt(head).padStart(7)}  requests ${fmtInt(requests).padStart(9)}`,
      );
    };

    // The head, for reads of any block; kept by the sampler and by a poll every second.
    const headPoll = setInterval(() => {
      headClient
        .call("eth_blockNumber", [], 5000)
        .then((h) => {
          ctx.head = Math.max(ctx.head, Number(h));
        })
        .catch(() => {});
    }, 1000);
    let sampling = Promise.resolve();
    const sampler = setInterval(() => {
      sampling = sampling.then(takeSample);
    }, opts.sample * 1000);
    const window = cpuWindow(handle.pid);
    let warmupSnapshot = Promise.resolve();
    const warmupTimer = setTimeout(() => {
      warmupSnapshot = snapshot("after the warm-up");
    }, loadMs / 3);
    await takeSample();
    await Promise.all([
      paced(port, stats.send, opts.txRate, 1, until, sendOne, ctx, stop),
      paced(port, stats.read, opts.readRate, 4, until, readOne, ctx, stop),
      paced(port, stats.call, opts.callRate, 2, until, callOne, ctx, stop),
      paced(port, stats.logs, opts.logsRate, 1, until, logsOne, ctx, stop),
      paced(port, stats.filter, opts.filterRate, 1, until, filterOne, ctx, stop),
      paced(port, stats.churn, opts.churnRate, 4, until, (_c, x) => churnOne(port, x), ctx, stop),
    ]);
    clearTimeout(warmupTimer);
    run.cpu = window.end(Object.values(stats).reduce((s, x) => s + x.ok, 0));
    run.loadSeconds = (performance.now() - t0) / 1000;
    clearInterval(headPoll);
    await sampling;
    await takeSample();
    await warmupSnapshot;
    await snapshot("at the end of the load");
    for (const ws of sockets) ws.close();
    sockets.length = 0;
    phase = "idle";
    if (opts.idle > 0) {
      await sleep(opts.idle * 1000);
      await sampling;
      await takeSample();
      await snapshot("at the end of the idle time");
    }
    clearInterval(sampler);
    await sampling;
    headClient.close();
    run.activity = {
      sent: ctx.sent,
      rareSent: ctx.rareSent,
      filtersLeft: ctx.filtersLeft,
      churned: ctx.churned,
      notifications: ctx.counts,
      churnNotifications: ctx.churnCounts,
      subscribers: opts.subscribers,
    };
    if (opts.subscribers > 0 && ctx.counts.heads === 0)
      run.warnings = [...(run.warnings ?? []), "the kept subscriptions got no newHeads"];
  } catch (err) {
    run.error = err.message;
    log(`  failed: ${err.message}`);
    const tail = readTail(join(tmp, `${server.id}.log`), 12);
    if (tail) log(tail.replace(/^/gm, "      | "));
  } finally {
    stop.now = true;
    for (const ws of sockets) ws.terminate();
    rpc.close();
    await stopChild(handle);
  }
}

// ---------------------------------------------------------------------------------------------
// Figures

const mean = (xs) => (xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length);

/** Least-squares slope of `y` over `t` (seconds), per minute. */
function slopePerMinute(points) {
  if (points.length < 3) return null;
  const mt = mean(points.map((p) => p.t));
  const my = mean(points.map((p) => p.y));
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return den === 0 ? null : (num / den) * 60;
}

/**
 * The figures of one series (`key`: rss, rssAnon or heapUsed) over the load samples: the means of the
 * middle and the last third, the slope over both, the peak, the last reading of the load and of
 * the idle time, and a verdict. Flat: the last third's mean at most 5 % (or 8 MB, whichever is
 * more) above the middle third's.
 */
function analyse(samples, key) {
  const load = samples.filter((s) => s.phase === "load" && s[key] !== null);
  const idle = samples.filter((s) => s.phase === "idle" && s[key] !== null);
  if (load.length < 6) return { verdict: "too few samples" };
  const third = Math.floor(load.length / 3);
  const middle = load.slice(third, 2 * third);
  const last = load.slice(2 * third);
  const mMiddle = mean(middle.map((s) => s[key]));
  const mLast = mean(last.map((s) => s[key]));
  const slope = slopePerMinute([...middle, ...last].map((s) => ({ t: s.t, y: s[key] })));
  const growth = mLast - mMiddle;
  const flat = growth <= Math.max(0.05 * mMiddle, 8 * MB);
  return {
    first: load[0][key],
    middle: mMiddle,
    last: mLast,
    growth,
    growthShare: growth / mMiddle,
    slopePerMinute: slope,
    peak: Math.max(...load.map((s) => s[key]), ...idle.map((s) => s[key])),
    endOfLoad: load[load.length - 1][key],
    endOfIdle: idle.length > 0 ? idle[idle.length - 1][key] : null,
    verdict: flat
      ? "flat after warm-up"
      : `grows: +${mb(growth)} MB (${(100 * (growth / mMiddle)).toFixed(0)} %) from the middle third to the last, ${mb(slope)} MB/min`,
  };
}

const pct = (x) => (x === null || x === undefined ? "—" : `${(100 * x).toFixed(0)}%`);
const signedMb = (x) =>
  x === null || x === undefined ? "—" : `${x >= 0 ? "+" : ""}${(x / MB).toFixed(1)}`;

function printFigures(runs) {
  for (const key of ["rss", "rssAnon", "heapUsed"]) {
    const rows = [];
    for (const run of runs) {
      if (!run.samples) continue;
      const a = analyse(run.samples, key);
      run.figures ??= {};
      run.figures[key] = a;
      if (a.middle === undefined) {
        if (key !== "heapUsed" || run.server.probe) rows.push([run.server.label, a.verdict]);
        continue;
      }
      rows.push([
        run.server.label,
        mb(a.first),
        mb(a.middle),
        mb(a.last),
        signedMb(a.growth),
        a.slopePerMinute === null ? "—" : signedMb(a.slopePerMinute),
        mb(a.peak),
        mb(a.endOfLoad),
        mb(a.endOfIdle),
        a.verdict,
      ]);
    }
    if (rows.length === 0) continue;
    log("");
    log(
      key === "rss"
        ? `RSS (MB), ${opts.minutes} min of load, then ${opts.idle} s idle; thirds of the load's samples`
        : key === "rssAnon"
          ? "RSS without mapped files (RssAnon, MB): the memory the process owns; the rest is the binary and the database files LevelDB maps (page cache)"
          : `JS heap used (MB, all threads${opts.gc ? ", live: after a full collection" : ", live and garbage not yet collected"}), Node servers`,
    );
    log(
      table(
        [
          "node",
          "first",
          "middle ⅓",
          "last ⅓",
          "last − middle",
          "MB/min",
          "peak",
          "end of load",
          "end of idle",
          "verdict",
        ],
        rows.map((r) => (r.length === 2 ? [r[0], "", "", "", "", "", "", "", "", r[1]] : r)),
        ["l", "r", "r", "r", "r", "r", "r", "r", "r", "l"],
      ),
    );
  }

  const rows = [];
  const notes = [];
  for (const run of runs) {
    if (!run.stats) {
      rows.push([run.server.label, run.skipped ?? run.error ?? "—", "", "", "", "", "", "", ""]);
      continue;
    }
    const s = run.stats;
    const per = (x) => (x.ok / run.loadSeconds).toFixed(x.ok / run.loadSeconds < 10 ? 1 : 0);
    const errors = Object.values(s).reduce((n, x) => n + x.errors, 0);
    rows.push([
      run.server.label,
      per(s.send),
      per(s.read),
      per(s.call),
      per(s.logs),
      fmtMs(s.logs.latencies.summary().p50),
      fmtInt(run.activity.notifications.heads + run.activity.notifications.logs),
      fmtInt(run.activity.churned),
      fmtInt(errors),
    ]);
    for (const [name, x] of Object.entries(s))
      if (x.errors > 0)
        notes.push(
          `  ${run.server.label} ${name}: ${fmtInt(x.errors)} errors, e.g. ${x.messages.join(" | ")}`,
        );
    if (run.cpu?.otherCPU && run.cpu.otherCPU.share > 0.15)
      notes.push(
        `  ${run.server.label}: other processes used ${pct(run.cpu.otherCPU.share)} of a core during the load: figures are noisy`,
      );
    if (run.cpu?.serverCPU)
      notes.push(
        `  ${run.server.label}: server CPU ${pct(run.cpu.serverCPU.share)} of a core, bench ${pct(run.cpu.clientCPU.share)}`,
      );
    for (const w of run.warnings ?? []) notes.push(`  ${run.server.label}: ${w}`);
  }
  log("");
  log("Load done (per second over the load; errors over all kinds)");
  log(
    table(
      [
        "node",
        "sends/s",
        "reads/s",
        "calls/s",
        "getLogs/s",
        "getLogs p50 ms",
        "notifications",
        "sockets churned",
        "errors",
      ],
      rows,
      ["l", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
  );
  for (const n of notes) log(n);
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  ensureBenchDeps(["ethers", "solc", "ws", "undici"]);
  const ethers = await loadEthers();
  WebSocket = (await import("ws")).WebSocket;
  if (selected.some((s) => s.kind === "nodex")) ensureNodexBuilt(args.build);
  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-soak-"));
  token = compileToken();
  const cpu = cpus();
  log(
    `Soak bench: ${selected.map((s) => s.id).join(", ")}; ${opts.minutes} min of load and ${opts.idle} s idle each, a sample every ${opts.sample} s; ` +
      `${opts.txRate} tx/s, ${opts.readRate} reads/s, ${opts.callRate} calls/s, ${opts.logsRate} getLogs/s, ${opts.filterRate} filters/s, ` +
      `${opts.subscribers} WebSocket connections kept, ${opts.churnRate} opened and closed per second`,
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), ethers ${ethers.version}, ws ${packageJSON("ws").json.version}`,
  );
  const runs = selected.map((server) => ({
    server: { id: server.id, label: server.label, kind: server.kind, probe: server.probe },
    version: null,
  }));
  for (const [i, server] of selected.entries()) {
    log("");
    log(`[${server.id}] ${server.label}`);
    const s = Date.now();
    await benchNode(server, runs[i], stamp);
    runs[i].seconds = (Date.now() - s) / 1000;
  }
  printFigures(runs);

  const file = join(resultsDir, `soak-${stamp}.json`);
  const report = {
    bench: "soak",
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
    runs: runs.map((r) => ({
      ...r,
      stats: r.stats
        ? Object.fromEntries(
            Object.entries(r.stats).map(([k, v]) => [
              k,
              {
                ok: v.ok,
                errors: v.errors,
                late: v.late,
                messages: v.messages,
                ms: v.latencies.summary(),
              },
            ]),
          )
        : undefined,
    })),
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log("");
  const snapshotDir = join(resultsDir, `soak-${stamp}`);
  if (existsSync(snapshotDir)) log(`heap snapshots: ${relative(root, snapshotDir)}`);
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
