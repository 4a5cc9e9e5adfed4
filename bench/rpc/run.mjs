#!/usr/bin/env node
// RPC bench: the cheapest JSON-RPC method, eth_chainId, with autocannon, against
// bare node:http (baseline), candidate HTTP layers (fastify, uWebSockets.js), the peers
// (Ganache, Hardhat node, Anvil) and Nodex, one server at a time, in one run.
//
//   npm run bench                                 (from the repo root)
//   node bench/rpc/run.mjs --duration 5 --only node-http,nodex
//
// See bench/README.md for what it measures and how to read the output.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const benchDir = dirname(here);
const root = dirname(benchDir);
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

class Skip extends Error {}

const NODEX_MAIN = join(root, "apps/node/dist/main.js");
/** Why Nodex could not be built, if it could not. */
const nodexBuild = { error: undefined, output: undefined };

const benchRequire = createRequire(join(benchDir, "package.json"));

function packageJSON(name) {
  // Look in the node_modules folders directly: some packages have no entry point (anvil) or
  // hide package.json behind their exports map (uWS).
  for (const dir of benchRequire.resolve.paths(name) ?? []) {
    const file = join(dir, name, "package.json");
    if (existsSync(file))
      return { dir: join(dir, name), json: JSON.parse(readFileSync(file, "utf8")) };
  }
  throw new Error(`Cannot find package ${name}`);
}

function resolveOrSkip(name, file = "") {
  try {
    const { dir, json } = packageJSON(name);
    return { path: join(dir, file), version: json.version };
  } catch (err) {
    throw new Skip(`${name} is not installed in bench/node_modules (${err.message})`);
  }
}

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
  {
    id: "ganache",
    label: "Ganache",
    kind: "peer",
    readyTimeoutMs: 60_000,
    prepare(port) {
      const { path, version } = resolveOrSkip("ganache", "dist/node/cli.js");
      return {
        cmd: process.execPath,
        args: [
          path,
          "--server.host",
          "127.0.0.1",
          "--server.port",
          String(port),
          "--logging.quiet",
        ],
        cwd: benchDir,
        version,
      };
    },
  },
  {
    id: "hardhat",
    label: "Hardhat node",
    kind: "peer",
    readyTimeoutMs: 90_000,
    prepare(port) {
      const { path, version } = resolveOrSkip("hardhat", "internal/cli/cli.js");
      return {
        cmd: process.execPath,
        args: [path, "node", "--hostname", "127.0.0.1", "--port", String(port)],
        // The folder holding hardhat.config.cjs is the Hardhat project root.
        cwd: join(here, "hardhat"),
        env: { HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1" },
        version,
      };
    },
  },
  {
    id: "anvil",
    label: "Anvil",
    kind: "peer",
    readyTimeoutMs: 30_000,
    prepare(port) {
      const arch = { x64: "amd64", arm64: "arm64" }[process.arch];
      const platformPkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
      const { version } = resolveOrSkip("@foundry-rs/anvil");
      // Run the binary itself, not the bin.mjs wrapper, so that the PID we measure is Anvil's.
      let path;
      try {
        path = join(
          packageJSON(platformPkg).dir,
          "bin",
          process.platform === "win32" ? "anvil.exe" : "anvil",
        );
      } catch {
        throw new Skip(`${platformPkg} (the package shipping the anvil binary) is not installed`);
      }
      if (!existsSync(path)) throw new Skip(`no anvil binary at ${path}`);
      return {
        cmd: path,
        args: ["--host", "127.0.0.1", "--port", String(port), "--silent"],
        cwd: benchDir,
        version,
      };
    },
  },
  nodex("nodex", "Nodex", []),
  // The same Nodex on its node:http layer, to compare its two HTTP layers in one run.
  nodex("nodex-node", "Nodex (--rpc-http-layer node)", ["--rpc-http-layer", "node"]),
];

function nodex(id, label, extraArgs) {
  return {
    id,
    label,
    kind: "nodex",
    readyTimeoutMs: 60_000,
    prepare(port, tmp) {
      if (!existsSync(NODEX_MAIN)) {
        throw new Skip(nodexBuild.error ?? "apps/node/dist/main.js is missing");
      }
      const datadir = join(tmp, `${id}-datadir`);
      mkdirSync(datadir, { recursive: true });
      let version = "?";
      try {
        version = JSON.parse(readFileSync(join(root, "apps/node/package.json"), "utf8")).version;
      } catch {}
      const commit = gitCommit();
      return {
        cmd: process.execPath,
        args: [
          NODEX_MAIN,
          "--regtest",
          "--datadir",
          datadir,
          "--rpc-host",
          "127.0.0.1",
          "--rpc-port",
          String(port),
          "--log-level",
          "warn",
          ...extraArgs,
        ],
        cwd: root,
        version: commit ? `${version} (${commit})` : version,
      };
    },
  };
}

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
// Child processes: every server runs in its own process group; all of them are stopped by PID.

const running = new Set();

function startChild({ cmd, args: argv, cwd, env }, logFile) {
  const log = openSync(logFile, "a");
  let child;
  try {
    child = spawn(cmd, argv, {
      cwd,
      env: { ...process.env, ...env },
      // stdin is a pipe the bench never writes: our candidate servers exit when it closes,
      // so they go away even if the bench is killed. Output goes to a file, not through us.
      stdio: ["pipe", log, log],
      detached: true,
    });
  } finally {
    closeSync(log);
  }
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (err) => resolve({ code: null, signal: null, error: err }));
  });
  child.stdin.on("error", () => {});
  const handle = { child, pid: child.pid, exited, done: false };
  exited.then(() => {
    handle.done = true;
  });
  running.add(handle);
  return handle;
}

/** PIDs of the processes in process group `pgid` (Linux /proc; empty elsewhere). */
function groupMembers(pgid) {
  const out = [];
  let entries = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) out.push(Number(e));
    } catch {}
  }
  return out;
}

function signalGroup(handle, signal) {
  if (handle.done) return;
  try {
    process.kill(-handle.pid, signal);
  } catch {}
}

async function stopChild(handle) {
  if (!handle) return;
  signalGroup(handle, "SIGTERM");
  const timedOut = await Promise.race([
    handle.exited.then(() => false),
    sleep(5000).then(() => true),
  ]);
  if (timedOut) {
    signalGroup(handle, "SIGKILL");
    await Promise.race([handle.exited, sleep(2000)]);
  }
  // Grandchildren left in the group (the group id keeps their PIDs from being reused): kill each.
  for (const pid of groupMembers(handle.pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  running.delete(handle);
}

function killAllSync() {
  for (const handle of running) {
    signalGroup(handle, "SIGKILL");
    for (const pid of groupMembers(handle.pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
  running.clear();
}

let tmp;
function cleanupSync() {
  killAllSync();
  if (tmp) {
    try {
      rmSync(tmp, { recursive: true, force: true });
    } catch {}
    tmp = undefined;
  }
}
process.on("exit", cleanupSync);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping servers\n`);
    cleanupSync();
    process.exit(130);
  });
}

/** Addresses the process listens on (TCP, Linux /proc), to check that it is loopback only. */
function listeningAddresses(pid) {
  const inodes = new Set();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {}
    }
  } catch {
    return undefined;
  }
  const out = [];
  for (const file of ["tcp", "tcp6"]) {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A" || !inodes.has(f[9])) continue;
      const [hex, portHex] = f[1].split(":");
      out.push({ address: hexToIP(hex), port: Number.parseInt(portHex, 16) });
    }
  }
  return out;
}

function hexToIP(hex) {
  if (hex.length === 8)
    return hex
      .match(/../g)
      .reverse()
      .map((b) => Number.parseInt(b, 16))
      .join(".");
  if (hex === "00000000000000000000000001000000") return "::1";
  if (hex === "00000000000000000000000000000000") return "::";
  if (hex.startsWith("0000000000000000FFFF0000")) return `::ffff:${hexToIP(hex.slice(24))}`;
  return hex;
}

function isLoopback(address) {
  return address.startsWith("127.") || address === "::1" || address.startsWith("::ffff:127.");
}

/** utime+stime of a process, in seconds (Linux /proc; undefined elsewhere). */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}
/** Busy CPU seconds of the whole machine, all cores (Linux /proc/stat; undefined elsewhere). */
function machineBusySeconds() {
  try {
    const f = readFileSync("/proc/stat", "utf8")
      .split("\n", 1)[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / CLK_TCK;
  } catch {
    return undefined;
  }
}

const CLK_TCK = (() => {
  const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const n = Number(r.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

// ---------------------------------------------------------------------------------------------
// HTTP helpers

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** One POST on a fresh connection (no agent), so nothing is left open afterwards. */
function post(port, body, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/",
        agent: false,
        headers: {
          "content-type": "application/json",
          connection: "close",
          "content-length": Buffer.byteLength(body),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

async function waitReady(port, handle, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (handle.done) {
      const { code, signal, error } = await handle.exited;
      throw new Error(
        error
          ? `could not start: ${error.message}`
          : `exited before answering (code ${code}, signal ${signal})`,
      );
    }
    try {
      const res = await post(port, SINGLE_BODY, 1000);
      if (res.status >= 200 && res.status < 300) return;
      last = `HTTP ${res.status}: ${res.text.slice(0, 200)}`;
    } catch (err) {
      last = err.message;
    }
    await sleep(100);
  }
  throw new Error(`not ready after ${timeoutMs / 1000} s (last: ${last})`);
}

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
// Load

let autocannon;

/**
 * Response times in ms as floats. autocannon's own latency histogram has 1 ms resolution, too
 * coarse for sub-millisecond servers, so the bench records each response time itself.
 */
class Latencies {
  #values = new Float64Array(1 << 20);
  #n = 0;
  push(ms) {
    if (this.#n === this.#values.length) {
      const bigger = new Float64Array(this.#values.length * 2);
      bigger.set(this.#values);
      this.#values = bigger;
    }
    this.#values[this.#n++] = ms;
  }
  summary() {
    const v = this.#values.subarray(0, this.#n).sort();
    const at = (p) =>
      v.length === 0
        ? null
        : v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
    let sum = 0;
    for (const x of v) sum += x;
    return {
      p50: at(50),
      p90: at(90),
      p99: at(99),
      p999: at(99.9),
      max: at(100),
      mean: v.length ? sum / v.length : null,
      count: v.length,
    };
  }
}

function cannon(port, workload, duration, expectBody, latencies) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}/`,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: workload.body,
        connections: opts.connections,
        pipelining: 1,
        duration,
        timeout: 10,
        ...(expectBody !== undefined ? { expectBody } : {}),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (latencies) instance.on("response", (_client, _status, _bytes, ms) => latencies.push(ms));
  });
}

async function measure(handle, port, workload, expectBody) {
  if (opts.warmup > 0) await cannon(port, workload, opts.warmup, expectBody);
  const cpu0 = cpuSeconds(handle.pid);
  const busy0 = machineBusySeconds();
  const client0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const latencies = new Latencies();
  const r = await cannon(port, workload, opts.duration, expectBody, latencies);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = cpuSeconds(handle.pid);
  const busy1 = machineBusySeconds();
  const client1 = process.cpuUsage(client0);
  const serverCPU = cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined;
  const total = r.requests.total;
  return {
    reqPerSec: r.requests.average,
    callsPerSec: r.requests.average * workload.calls,
    latencyMs: latencies.summary(),
    autocannonLatencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: r.latency.mean,
    },
    requests: total,
    ok2xx: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    resets: r.resets ?? 0,
    throughputBytesPerSec: r.throughput.average,
    durationS: r.duration,
    serverCPU:
      serverCPU === undefined
        ? null
        : {
            seconds: serverCPU,
            share: serverCPU / wall,
            usPerRequest: total > 0 ? (serverCPU / total) * 1e6 : null,
          },
    clientCPU: {
      seconds: (client1.user + client1.system) / 1e6,
      share: (client1.user + client1.system) / 1e6 / wall,
    },
    // CPU used by everything else on the machine meanwhile: noise in the figures.
    otherCPU:
      busy0 !== undefined && busy1 !== undefined && serverCPU !== undefined
        ? {
            share:
              Math.max(0, busy1 - busy0 - serverCPU - (client1.user + client1.system) / 1e6) / wall,
          }
        : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Setup steps

function ensureBenchDeps() {
  if (existsSync(join(benchDir, "node_modules"))) return;
  log("bench/node_modules is missing: npm install --prefix bench --no-audit --no-fund");
  const r = spawnSync("npm", ["install", "--prefix", benchDir, "--no-audit", "--no-fund"], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) {
    process.stderr.write(`npm install in bench/ failed (exit ${r.status ?? r.signal})\n`);
    process.exit(1);
  }
}

function ensureNodexBuilt(force) {
  if (existsSync(NODEX_MAIN) && !force) {
    const newer = newestSource();
    if (newer && newer.mtimeMs > statSync(NODEX_MAIN).mtimeMs) {
      log(
        `note: ${relative(root, newer.path)} is newer than apps/node/dist/main.js: Nodex may be stale (--build rebuilds it)`,
      );
    }
    return;
  }
  log(`${force ? "--build" : "apps/node/dist/main.js is missing"}: npm run build (repo root)`);
  const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };
  if (build("npm", ["run", "build"], env)) return;
  // `npm run build` is turbo; when turbo itself cannot run, `tsc -b` builds the same project
  // references (the root tsconfig.json lists them).
  log("  trying npx tsc -b (repo root)");
  if (build("npx", ["--no-install", "tsc", "-b"], env)) return;
  nodexBuild.error =
    "the build failed (npm run build, then tsc -b), so apps/node/dist/main.js is missing";
}

function build(cmd, argv, env) {
  const t0 = Date.now();
  const r = spawnSync(cmd, argv, { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, env });
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  if (r.status === 0 && existsSync(NODEX_MAIN)) {
    log(`  built in ${seconds} s`);
    return true;
  }
  const tail = lastLines(
    `${r.stdout ?? ""}\n${r.stderr ?? String(r.error ?? "")}`
      .split("\n")
      .filter((l) => !/^npm warn|telemetry|^Attention:|roadmap|opt-out/i.test(l))
      .join("\n"),
    12,
  );
  nodexBuild.output = `${nodexBuild.output ? `${nodexBuild.output}\n` : ""}$ ${cmd} ${argv.join(" ")}\n${tail}`;
  log(
    `  ${cmd} ${argv.join(" ")} failed (exit ${r.status ?? r.signal}) after ${seconds} s; its output ends with:\n${indent(tail, "      | ")}`,
  );
  return false;
}

/** The most recently modified file under packages/*\/src and apps/*\/src. */
function newestSource() {
  let newest;
  const walk = (dir) => {
    let entries = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const { mtimeMs } = statSync(p);
        if (!newest || mtimeMs > newest.mtimeMs) newest = { path: p, mtimeMs };
      }
    }
  };
  for (const top of ["packages", "apps"]) {
    let names = [];
    try {
      names = readdirSync(join(root, top));
    } catch {}
    for (const name of names) walk(join(root, top, name, "src"));
  }
  return newest;
}

function gitCommit() {
  const r = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) return undefined;
  const dirty = spawnSync("git", ["status", "--porcelain", "--", "packages", "apps"], {
    cwd: root,
    encoding: "utf8",
  });
  return `${r.stdout.trim()}${dirty.stdout?.trim() ? "+dirty" : ""}`;
}

// ---------------------------------------------------------------------------------------------
// Output

function log(line) {
  process.stdout.write(`${line}\n`);
}
function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
function lastLines(text, n) {
  return text
    .trimEnd()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(-n)
    .join("\n");
}
function firstLines(text, n) {
  return String(text ?? "")
    .trim()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(0, n)
    .join(" | ");
}
function indent(text, pad) {
  return text
    .split("\n")
    .map((l) => pad + l)
    .join("\n");
}
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

function readTail(file, n) {
  try {
    // Strip ANSI colours (Hardhat).
    return lastLines(readFileSync(file, "utf8").replace(ANSI_ESCAPE, ""), n);
  } catch {
    return "";
  }
}

function fmtInt(n) {
  return n === undefined || n === null ? "—" : Math.round(n).toLocaleString("en-US");
}
function fmtK(n) {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(Math.round(n));
}
function fmtMs(n) {
  if (n === undefined || n === null) return "—";
  return n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0);
}
function fmtRatio(a, b) {
  if (!a || !b) return "—";
  const r = a / b;
  return `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}

function table(headers, rows, align) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells
      .map((c, i) =>
        align[i] === "r" ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]),
      )
      .join("  ")
      .trimEnd();
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

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
  let spec;
  try {
    spec = server.prepare(port, tmp);
  } catch (err) {
    run.version = server.version ?? null;
    run.skipped = err instanceof Skip ? err.message : `cannot prepare: ${err.message}`;
    if (server.kind === "nodex" && nodexBuild.output) run.buildOutput = nodexBuild.output;
    if (server.loadInfo) run.load = server.loadInfo;
    log(`  skipped: ${run.skipped}`);
    return;
  }
  run.version = spec.version ?? server.version ?? null;
  if (server.loadInfo) run.load = server.loadInfo;
  run.command = [
    spec.cmd === process.execPath
      ? "node"
      : spec.cmd.startsWith(root)
        ? relative(root, spec.cmd)
        : spec.cmd,
    ...spec.args.map((a) => (a.startsWith(root) ? relative(root, a) : a)),
  ].join(" ");
  const logFile = join(tmp, `${server.id}-${round}.log`);
  const t0 = Date.now();
  const handle = startChild(spec, logFile);
  try {
    try {
      await waitReady(port, handle, server.readyTimeoutMs);
    } catch (err) {
      const tail = readTail(logFile, 12);
      run.skipped = `did not start: ${err.message}${tail ? `\n${indent(tail, "      | ")}` : ""}`;
      log(`  ${run.skipped}`);
      return;
    }
    run.startupMs = Date.now() - t0;
    const listening = listeningAddresses(handle.pid);
    if (listening !== undefined) {
      run.listening = listening.map((l) => `${l.address}:${l.port}`);
      const outside = listening.filter((l) => !isLoopback(l.address));
      if (outside.length > 0) {
        run.skipped = `listens beyond loopback (${outside.map((l) => `${l.address}:${l.port}`).join(", ")}): stopped, not measured`;
        log(`  ${run.skipped}`);
        return;
      }
    }
    log(
      `  ready in ${(run.startupMs / 1000).toFixed(1)} s on 127.0.0.1:${port} (pid ${handle.pid})${run.version ? `, version ${run.version}` : ""}`,
    );
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
      const m = await measure(handle, port, workload, check.text);
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
  autocannon = (await import("autocannon")).default;
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
