#!/usr/bin/env node
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
// Fork bench: a development chain forked from a live one. An upstream Nodex node (regtest) holds a
// token with --holders holders (one transfer a block); each candidate (Nodex with --fork-url,
// Anvil with --fork-url, Hardhat's node with --fork) forks it at its head through a counting
// proxy, and runs the same script: read --slots storage slots of the token (its balances),
// --calls eth_calls of balanceOf for other holders, then --txs token transfers, each sent and
// waited for. Each candidate runs it cold (a fresh fork) and warm (restarted on the same fork
// block with what it kept from the cold run: Nodex its datadir, Anvil its ~/.foundry cache,
// Hardhat its fork cache). Prints the wall time of each phase, the requests each candidate sent
// upstream (HTTP requests and JSON-RPC calls, start-up included) and the ratio Nodex ÷ peer.
//
//   node bench/fork/run.mjs                                (from the repo root)
//   node bench/fork/run.mjs --holders 300 --slots 300 --calls 50 --txs 20 --only nodex,anvil
//
// See bench/README.md (bench/fork) for what it measures and how to read the output.
import { createServer, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import {
  ACCOUNT0,
  compileToken,
  GAS_DEPLOY,
  GAS_TOKEN_TRANSFER,
  loadEthers,
  sign,
  TOKEN_SUPPLY,
  waitMined,
} from "../lib/eth.mjs";
import { fmtInt, fmtMs, log, table } from "../lib/format.mjs";
import { freePort, RPCClient } from "../lib/http.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { anvilPeer, hardhatPeer, launchServer, nodexServer } from "../lib/servers.mjs";
import { ensureBenchDeps, ensureNodexBuilt, gitCommit, root } from "../lib/setup.mjs";

const USAGE = `usage: node bench/fork/run.mjs [--holders N] [--slots N] [--calls N] [--txs N] [--only a,b] [--build]

  --holders N   token holders on the upstream, one transfer block each (default 1000)
  --slots N     storage slots read on the fork (default 1000, at most --holders)
  --calls N     eth_calls of balanceOf on the fork (default 200)
  --txs N       token transfers sent on the fork, each waited for (default 100)
  --only a,b    candidates: nodex, anvil, hardhat (default all)
  --build       run npm run build even if apps/node/dist/main.js exists`;

const { values: args } = parseArgs({
  options: {
    holders: { type: "string", default: "1000" },
    slots: { type: "string", default: "1000" },
    calls: { type: "string", default: "200" },
    txs: { type: "string", default: "100" },
    only: { type: "string" },
    build: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
function count(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`${name} must be a positive integer, got ${JSON.stringify(text)}\n`);
    process.exit(2);
  }
  return n;
}
const HOLDERS = count("--holders", args.holders);
const SLOTS = Math.min(count("--slots", args.slots), HOLDERS);
const CALLS = count("--calls", args.calls);
const TXS = count("--txs", args.txs);
const CANDIDATES = ["nodex", "anvil", "hardhat"];
const only = args.only?.split(",").map((s) => s.trim()) ?? CANDIDATES;
const unknown = only.filter((c) => !CANDIDATES.includes(c));
if (unknown.length > 0) {
  process.stderr.write(`unknown candidate(s): ${unknown.join(", ")}\n${USAGE}\n`);
  process.exit(2);
}

ensureBenchDeps(["solc", "ethers", "hardhat", "@foundry-rs/anvil"]);
ensureNodexBuilt(args.build);
const ethers = await loadEthers();
const tmp = mkdtempSync(join(tmpdir(), "nodex-bench-fork-"));
installCleanup(() => rmSync(tmp, { recursive: true, force: true }));

/** Holder i's address: varied, none of them anyone else's. */
const holder = (i) => `0x${(0xf0e1d2c30000n + BigInt(i)).toString(16).padStart(40, "0")}`;
/** The token's balance slot of `address` (`balanceOf` is the mapping at slot 1). */
const balanceSlot = (address) =>
  ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [address, 1]));

// ---------------------------------------------------------------------------------------------
// The upstream and the counting proxy in front of it

async function buildUpstream(port, token) {
  const rpc = new RPCClient(port);
  const chainId = Number(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
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
  if (receipt?.status !== "0x1") throw new Error("the token's deployment failed upstream");
  const address = receipt.contractAddress;
  for (let i = 0; i < HOLDERS; i++) {
    const tx = sign({
      chainId,
      nonce: nonce++,
      gasPrice,
      gasLimit: GAS_TOKEN_TRANSFER,
      to: address,
      data: token.iface.encodeFunctionData("transfer", [holder(i), 1000n + BigInt(i)]),
    });
    await rpc.call("eth_sendRawTransaction", [tx.raw]);
    if ((await waitMined(rpc, tx.hash))?.status !== "0x1")
      throw new Error(`transfer ${i} failed upstream`);
  }
  const head = Number(await rpc.call("eth_blockNumber"));
  rpc.close();
  return { address, head };
}

/** An HTTP proxy to the upstream that counts what goes through it. */
async function countingProxy(upstreamPort) {
  const counts = { requests: 0, calls: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      counts.requests++;
      try {
        const parsed = JSON.parse(body.toString("utf8"));
        counts.calls += Array.isArray(parsed) ? parsed.length : 1;
      } catch {
        counts.calls++;
      }
      const out = request(
        {
          host: "127.0.0.1",
          port: upstreamPort,
          method: "POST",
          path: "/",
          headers: { "content-type": "application/json", "content-length": body.length },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, { "content-type": "application/json" });
          answer.pipe(res);
        },
      );
      out.on("error", (err) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(String(err));
      });
      out.end(body);
    });
  });
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${port}`, counts, close: () => server.close() };
}

// ---------------------------------------------------------------------------------------------
// Candidates

/** `base` with arguments (and environment) added to what it starts. */
function withArgs(base, extra, { cwd, env } = {}) {
  return {
    ...base,
    prepare(port, dir) {
      const spec = base.prepare(port, dir);
      return {
        ...spec,
        args: [...spec.args, ...extra],
        ...(cwd ? { cwd } : {}),
        env: { ...spec.env, ...env },
      };
    },
  };
}

function candidate(id, proxyUrl, forkBlock) {
  if (id === "nodex")
    return nodexServer({
      id: "nodex-fork",
      nodeArgs: process.env.FORK_PROF
        ? ["--cpu-prof", `--cpu-prof-dir=${process.env.FORK_PROF}`]
        : [],
      extraArgs: ["--fork-url", proxyUrl, "--fork-block", String(forkBlock)],
    });
  if (id === "anvil")
    return withArgs(anvilPeer(), [
      "--fork-url",
      proxyUrl,
      "--fork-block-number",
      String(forkBlock),
    ]);
  return withArgs(hardhatPeer(), ["--fork", proxyUrl, "--fork-block-number", String(forkBlock)], {
    cwd: join(root, "bench/fork"),
    env: { NODEX_BENCH_HARDHAT_CACHE: join(tmp, "hardhat-cache") },
  });
}

// ---------------------------------------------------------------------------------------------
// The script

/** `n` jobs run `width` at a time. */
async function pool(n, width, job) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) await job(next++);
    }),
  );
}

async function script(id, port, chain, token, expected) {
  const clients = Array.from({ length: 8 }, () => new RPCClient(port));
  const phases = {};
  let t0 = performance.now();
  // Hardhat's node runs calls at the fork block under the upstream's hardforks, which it knows
  // only for Ethereum's own chains (and a custom history in its config did not help here): a
  // call fails until a block is mined on top, its maintainers' workaround (hardhat#5511).
  if (id === "hardhat") await clients[0].call("evm_mine", []);
  // Reads of the token's balance slots.
  let wrong = 0;
  await pool(SLOTS, clients.length, async (i) => {
    const value = await clients[i % clients.length].call("eth_getStorageAt", [
      chain.address,
      balanceSlot(holder(i)),
      "latest",
    ]);
    if (BigInt(value) !== expected(i)) wrong++;
  });
  if (wrong > 0) throw new Error(`${wrong} of ${SLOTS} slots read differ from the upstream's`);
  phases.slots = performance.now() - t0;
  // Calls of balanceOf, from the last holders backwards (other slots than the reads, as far as
  // there are holders).
  t0 = performance.now();
  await pool(CALLS, clients.length, async (i) => {
    const who = HOLDERS - 1 - (i % HOLDERS);
    const data = token.iface.encodeFunctionData("balanceOf", [holder(who)]);
    const out = await clients[i % clients.length].call("eth_call", [
      { to: chain.address, data },
      "latest",
    ]);
    if (BigInt(out) !== expected(who)) wrong++;
  });
  if (wrong > 0) throw new Error(`${wrong} of ${CALLS} calls differ from the upstream's`);
  phases.calls = performance.now() - t0;
  // Transfers from account #0 (the token's deployer: funded on every candidate) to new accounts.
  t0 = performance.now();
  const rpc = clients[0];
  const chainId = Number(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  let nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  for (let i = 0; i < TXS; i++) {
    const tx = sign({
      chainId,
      nonce: nonce++,
      gasPrice,
      gasLimit: GAS_TOKEN_TRANSFER,
      to: chain.address,
      data: token.iface.encodeFunctionData("transfer", [
        `0x${(0xabc000000000n + BigInt(nonce)).toString(16).padStart(40, "0")}`,
        1n,
      ]),
    });
    await rpc.call("eth_sendRawTransaction", [tx.raw]);
    const receipt = await waitMined(rpc, tx.hash);
    if (receipt?.status !== "0x1") throw new Error(`transfer ${i} on the fork failed`);
  }
  phases.txs = performance.now() - t0;
  for (const c of clients) c.close();
  phases.total = phases.slots + phases.calls + phases.txs;
  return phases;
}

// ---------------------------------------------------------------------------------------------

const started = new Date();
log(
  `bench/fork: ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}; ${HOLDERS} holders, ${SLOTS} slots, ${CALLS} calls, ${TXS} transfers`,
);
const token = compileToken();
log("building the upstream");
const upstreamPort = await freePort();
const upstreamRun = {};
const upstream = await launchServer(nodexServer({ id: "upstream" }), upstreamRun, {
  port: upstreamPort,
  tmp,
  logFile: join(tmp, "upstream.log"),
});
if (upstream === undefined || upstreamRun.skipped) process.exit(1);
const chain = await buildUpstream(upstreamPort, token);
log(`  head ${chain.head}, token ${chain.address}`);
const expected = (i) => 1000n + BigInt(i);
const proxy = await countingProxy(upstreamPort);

const results = [];
try {
  for (const id of CANDIDATES.filter((c) => only.includes(c))) {
    const result = { id, runs: {} };
    results.push(result);
    for (const temperature of ["cold", "warm"]) {
      log(`${id} (${temperature}):`);
      const before = { ...proxy.counts };
      const port = await freePort();
      const run = {};
      const t0 = performance.now();
      const handle = await launchServer(candidate(id, proxy.url, chain.head), run, {
        port,
        tmp,
        logFile: join(tmp, `${id}-${temperature}.log`),
      });
      if (handle === undefined || run.skipped) {
        result.skipped = run.skipped ?? "did not start";
        break;
      }
      const startup = performance.now() - t0;
      try {
        const phases = await script(id, port, chain, token, expected);
        const upstreamUse = {
          requests: proxy.counts.requests - before.requests,
          calls: proxy.counts.calls - before.calls,
        };
        result.runs[temperature] = { startup, phases, upstream: upstreamUse, version: run.version };
        log(
          `  start ${fmtMs(startup)} ms; slots ${fmtMs(phases.slots)} ms, calls ${fmtMs(phases.calls)} ms, transfers ${fmtMs(phases.txs)} ms; upstream ${fmtInt(upstreamUse.requests)} requests, ${fmtInt(upstreamUse.calls)} calls`,
        );
      } catch (err) {
        result.runs[temperature] = { error: String(err.message ?? err) };
        log(`  failed: ${err.message ?? err}`);
      } finally {
        await stopChild(handle);
      }
    }
  }
} finally {
  proxy.close();
  await stopChild(upstream);
}

const nodex = results.find((r) => r.id === "nodex");
const rows = [];
for (const r of results) {
  if (r.skipped !== undefined) {
    rows.push([r.id, "—", "skipped", "", "", "", "", r.skipped.slice(0, 60)]);
    continue;
  }
  for (const temperature of ["cold", "warm"]) {
    const run = r.runs[temperature];
    if (run === undefined || run.error !== undefined) {
      rows.push([r.id, temperature, "failed", "", "", "", "", run?.error?.slice(0, 60) ?? ""]);
      continue;
    }
    const mine = nodex?.runs[temperature];
    const ratio =
      r.id === "nodex" || mine?.phases === undefined
        ? "—"
        : `${(mine.phases.total / run.phases.total).toFixed(2)} time, ${(mine.upstream.calls / Math.max(1, run.upstream.calls)).toFixed(2)} calls`;
    rows.push([
      r.id,
      temperature,
      fmtMs(run.phases.total),
      fmtMs(run.phases.slots),
      fmtMs(run.phases.calls),
      fmtMs(run.phases.txs),
      `${fmtInt(run.upstream.requests)} / ${fmtInt(run.upstream.calls)}`,
      ratio,
    ]);
  }
}
log("");
log(
  table(
    [
      "candidate",
      "run",
      "script ms",
      "slots ms",
      "calls ms",
      "transfers ms",
      "upstream requests / calls",
      "Nodex ÷ candidate",
    ],
    rows,
    ["l", "l", "r", "r", "r", "r", "r", "l"],
  ),
);
const out = join(root, "bench/results", `fork-${started.toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      bench: "fork",
      started: started.toISOString(),
      commit: gitCommit(root),
      node: process.version,
      cores: cpus().length,
      holders: HOLDERS,
      slots: SLOTS,
      calls: CALLS,
      txs: TXS,
      forkBlock: chain.head,
      results,
    },
    null,
    2,
  )}\n`,
);
log(`results: ${relative(root, out)}`);
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
