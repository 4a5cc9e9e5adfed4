#!/usr/bin/env node
// Logs bench: eth_getLogs and newHeads against Nodex (regtest), Hardhat's node, Ganache and
// Anvil, one node at a time, in one run. On each node: a chain of one ERC-20 transfer per block
// (signed here, sent one by one, recipients in turn), queried by the token's address and the
// Transfer topic of one recipient over the last 1,000 and 10,000 of those blocks (ms per query);
// then 1,200 more blocks, transfers to two recipients in turn, queried for the first over 500
// windows of 1,000 blocks (500 logs each) ending near the head (median and p99);
// then the chain is extended with empty blocks to 100,000, a handful of them holding a transfer
// to a rare recipient, and that topic is queried over the whole range; then 1,000 WebSocket
// subscribers to newHeads, and blocks mined one at a time: ms from evm_mine to the first and
// the last subscriber's notification. Prints each figure and the ratio Nodex ÷ peer.
//
//   node bench/logs/run.mjs                           (from the repo root)
//   node bench/logs/run.mjs --blocks 2000 --rare-blocks 5000 --subscribers 200 --only nodex,anvil
//
// See bench/README.md for what it measures and how to read the output.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
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
import { firstLines, fmtInt, fmtMs, indent, log, readTail, table } from "../lib/format.mjs";
import { freePort, RPCClient } from "../lib/http.mjs";
import { cpuWindow, Latencies } from "../lib/load.mjs";
import { CLK_TCK, installCleanup, stopChild } from "../lib/proc.mjs";
import { summarizeProfile } from "../lib/profile.mjs";
import {
  anvilPeer,
  DEV_MNEMONIC,
  ganachePeer,
  hardhatPeer,
  launchServer,
  nodexServer,
} from "../lib/servers.mjs";
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

const FIGURE_IDS = ["getlogs", "dense", "rare", "heads"];

const USAGE = `usage: node bench/logs/run.mjs [--blocks N] [--queries N] [--recipients N] [--dense-window N] [--dense-span N] [--dense-queries N] [--rare-blocks N] [--rare-logs N] [--rare-budget S] [--evm-mine] [--subscribers N] [--heads N] [--only a,b] [--figures a,b] [--nodex-cpu-prof] [--before PATH] [--build] [--list]

  --blocks N        one-transfer blocks sent for the eth_getLogs ranges (default 10000)
  --queries N       timed eth_getLogs queries per range (default 20; at most --query-seconds)
  --query-seconds S stop a range's timed queries after S seconds, with at least 3 (default 60)
  --recipients N    the transfers' recipients, in turn; the query selects the first (default 4)
  --dense-window N  blocks of each dense query, every other one with a match (default 1000)
  --dense-span N    how far below the head a dense window may end (default 200)
  --dense-queries N timed dense queries, each over another window (default 500)
  --rare-blocks N   blocks of the rare-topic range, the chain extended to that height (default 100000)
  --rare-logs N     blocks in it holding a log with the rare topic (default 5)
  --rare-budget S   seconds a node may take to mine the empty blocks; slower: not measured (default 300)
  --evm-mine        mine the empty blocks with batches of evm_mine on every node (not anvil_mine
                    nor Ganache's evm_mine {blocks})
  --subscribers N   WebSocket connections, each subscribed to newHeads (default 1000)
  --heads N         blocks mined one at a time while they listen (default 30)
  --only a,b        run only these nodes (ids from --list); nodex is the ratio reference
  --figures a,b     run only these figures (${FIGURE_IDS.join(", ")})
  --before PATH     also run the Nodex built in another checkout (PATH, e.g. one of the commit
                    before a change) as the node nodex-before, right after this one
  --build           run \`npm run build\` first even if apps/node/dist/main.js exists
  --list            print the node and figure ids and exit
`;

let args;
try {
  args = parseArgs({
    options: {
      blocks: { type: "string", default: "10000" },
      queries: { type: "string", default: "20" },
      "query-seconds": { type: "string", default: "60" },
      recipients: { type: "string", default: "4" },
      "dense-window": { type: "string", default: "1000" },
      "dense-span": { type: "string", default: "200" },
      "dense-queries": { type: "string", default: "500" },
      "rare-blocks": { type: "string", default: "100000" },
      "rare-logs": { type: "string", default: "5" },
      "rare-budget": { type: "string", default: "300" },
      "evm-mine": { type: "boolean", default: false },
      subscribers: { type: "string", default: "1000" },
      heads: { type: "string", default: "30" },
      only: { type: "string" },
      figures: { type: "string" },
      "nodex-cpu-prof": { type: "boolean", default: false },
      before: { type: "string" },
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
  blocks: positiveInteger("--blocks", args.blocks),
  queries: positiveInteger("--queries", args.queries),
  querySeconds: positiveNumber("--query-seconds", args["query-seconds"]),
  recipients: positiveInteger("--recipients", args.recipients),
  denseWindow: positiveInteger("--dense-window", args["dense-window"]),
  denseSpan: positiveInteger("--dense-span", args["dense-span"]),
  denseQueries: positiveInteger("--dense-queries", args["dense-queries"]),
  rareBlocks: positiveInteger("--rare-blocks", args["rare-blocks"]),
  rareLogs: positiveInteger("--rare-logs", args["rare-logs"]),
  rareBudget: positiveNumber("--rare-budget", args["rare-budget"]),
  evmMine: args["evm-mine"],
  subscribers: positiveInteger("--subscribers", args.subscribers),
  heads: positiveInteger("--heads", args.heads),
};

function positiveNumber(flag, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    usage(`${flag} must be a positive number, got ${JSON.stringify(text)}`);
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
function idList(flag, text, known) {
  const wanted = text
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const unknown = wanted.filter((w) => !known.includes(w));
  if (unknown.length > 0)
    usage(`unknown id(s) in ${flag}: ${unknown.join(", ")} (known: ${known.join(", ")})`);
  return wanted;
}

// ---------------------------------------------------------------------------------------------
// Nodes

/** Where Nodex's threads write their profiles with --nodex-cpu-prof (one file per thread). */
const PROFILE_DIR = join(tmpdir(), `nodex-bench-logs-prof-${process.pid}`);

const NODES = [
  nodexServer(
    args["nodex-cpu-prof"] ? { nodeArgs: ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR] } : {},
  ),
  ...(args.before
    ? [
        nodexServer({
          id: "nodex-before",
          label: `Nodex (${args.before})`,
          home: resolve(args.before),
        }),
      ]
    : []),
  hardhatPeer(),
  // As in bench/chain: account #0 of the mnemonic funded, each transaction mined into its own
  // block before eth_sendRawTransaction answers.
  ganachePeer(["--wallet.mnemonic", DEV_MNEMONIC, "--miner.instamine", "eager"]),
  anvilPeer(),
];

/**
 * How a node mines `n` empty blocks in one call, where it builds them all; the others (Nodex,
 * Hardhat) get batches of evm_mine. Hardhat's hardhat_mine is left out: it only reserves the
 * blocks (NomicFoundation/hardhat#2032), which its eth_getLogs then skips.
 */
const MINE_MANY = {
  // Anvil's anvil_mine slows down as the chain grows: small chunks, so the budget check runs.
  anvil: { method: "anvil_mine", params: (n) => [hex(n)], chunk: 1_000 },
  ganache: { method: "evm_mine", params: (n) => [{ blocks: n }], chunk: 1_000 },
};
/** evm_mine calls per JSON-RPC batch when a node has no way to mine many blocks in one call. */
const MINE_BATCH = 500;

if (args.list) {
  for (const s of NODES) process.stdout.write(`${s.id.padEnd(10)} ${s.label} [${s.kind}]\n`);
  process.stdout.write(`figures: ${FIGURE_IDS.join(", ")}\n`);
  process.exit(0);
}
const selected =
  args.only === undefined
    ? NODES
    : (() => {
        const wanted = idList(
          "--only",
          args.only,
          NODES.map((s) => s.id),
        );
        return NODES.filter((s) => wanted.includes(s.id));
      })();
const figureIds =
  args.figures === undefined ? FIGURE_IDS : idList("--figures", args.figures, FIGURE_IDS);

// ---------------------------------------------------------------------------------------------
// The chain: token, transfers, rare logs

/** The transfers' recipients (fresh addresses): block i of the chain goes to RECIPIENTS[i % n]. */
const RECIPIENTS = Array.from(
  { length: opts.recipients },
  (_, i) => `0x${(0xbe100 + i).toString(16).padStart(40, "0")}`,
);
/** The dense figure's two recipients, in turn: one block in two has a log for the first. */
const DENSE_TO = [
  "0x00000000000000000000000000000000000be200",
  "0x00000000000000000000000000000000000be201",
];
/** Transfer blocks of the dense figure: its windows end in the last --dense-span + 1 of them. */
const DENSE_BLOCKS = opts.denseWindow + opts.denseSpan;
/** The rare recipient: its Transfer topic is in --rare-logs blocks of the whole chain. */
const RARE_TO = "0x00000000000000000000000000000000000be1ff";
/** The ranges queried by address and topic: the last 1,000 and 10,000 transfer blocks. */
const RANGES = [...new Set([1000, 10_000].map((n) => Math.min(n, opts.blocks)))];

let token;

async function tokenBalance(rpc, ctx, who) {
  const data = token.iface.encodeFunctionData("balanceOf", [who]);
  return BigInt(await rpc.call("eth_call", [{ to: ctx.token, data }, "latest"]));
}

/** A token transfer of 1 unit from account #0, sent and mined in a block of its own: {hash, block}. */
async function sendTransfer(rpc, ctx, to, what) {
  const tx = sign({
    chainId: ctx.chainId,
    nonce: ctx.nonce,
    gasPrice: ctx.gasPrice,
    gasLimit: GAS_TOKEN_TRANSFER,
    to: ctx.token,
    data: token.iface.encodeFunctionData("transfer", [to, 1n]),
  });
  const hash = await rpc.call("eth_sendRawTransaction", [tx.raw]);
  if (String(hash).toLowerCase() !== tx.hash)
    throw new Error(`${what}: answered ${JSON.stringify(hash)}, expected ${tx.hash}`);
  ctx.nonce++;
  // Awaited before the next send, so that every transfer gets a block of its own (Anvil answers
  // before it mines; the others mine before they answer).
  const receipt = await waitMined(rpc, tx.hash, 5000);
  if (!receipt) throw new Error(`${what} was not mined within 5 s: no automine?`);
  if (receipt.status !== "0x1") throw new Error(`${what} failed: ${JSON.stringify(receipt)}`);
  if (receipt.logs?.length !== 1 || receipt.logs[0].topics?.[0] !== TRANSFER_TOPIC)
    throw new Error(`${what} without its Transfer log`);
  return { hash: tx.hash, block: Number(receipt.blockNumber) };
}

/** Chain id, gas price, funds; deploys the token and checks that the node mines one block per transaction. */
async function prepareChain(rpc, run) {
  const chainId = BigInt(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const balance = BigInt(await rpc.call("eth_getBalance", [ACCOUNT0, "latest"]));
  const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  const head0 = Number(await rpc.call("eth_blockNumber"));
  const transfers =
    (figureIds.includes("getlogs") ? opts.blocks : 0) +
    (figureIds.includes("dense") ? DENSE_BLOCKS : 0) +
    opts.rareLogs +
    1;
  const need = gasPrice * (GAS_DEPLOY + BigInt(transfers) * GAS_TOKEN_TRANSFER);
  run.chain = { chainId: hex(chainId), gasPrice: hex(gasPrice), head: head0 };
  if (balance < need)
    throw new Error(`account #0 holds ${balance} wei, the run needs ${need} (is it funded?)`);
  const ctx = { chainId, gasPrice, nonce };
  const deploy = sign({
    chainId,
    nonce: ctx.nonce,
    gasPrice,
    gasLimit: GAS_DEPLOY,
    to: null,
    data: token.bytecode + token.iface.encodeDeploy([TOKEN_SUPPLY]).slice(2),
  });
  const sent = await rpc.call("eth_sendRawTransaction", [deploy.raw]);
  if (String(sent).toLowerCase() !== deploy.hash)
    throw new Error(`eth_sendRawTransaction answered ${sent}, expected ${deploy.hash}`);
  ctx.nonce++;
  const receipt = await waitMined(rpc, deploy.hash, 10_000);
  if (!receipt) throw new Error("the deployment was not mined within 10 s: no automine?");
  if (receipt.status !== "0x1")
    throw new Error(`the deployment failed: ${JSON.stringify(receipt)}`);
  const head1 = Number(await rpc.call("eth_blockNumber"));
  if (head1 !== head0 + 1)
    throw new Error(`one transaction moved the head from ${head0} to ${head1}, expected +1`);
  ctx.token = receipt.contractAddress.toLowerCase();
  if ((await tokenBalance(rpc, ctx, ACCOUNT0)) !== TOKEN_SUPPLY)
    throw new Error("balanceOf(deployer) is not the supply");
  run.chain.token = ctx.token;
  log(
    `  chain id ${hex(chainId)}, gas price ${hex(gasPrice)}; token deployed at ${ctx.token} (block ${head1})`,
  );
  return ctx;
}

/**
 * A transfer chain (set-up, not measured): `count` transfers of 1 unit, transfer i to
 * recipients[i % n], each in the next block. {txs: [{hash, block, to}], seconds}
 */
async function buildTransfers(rpc, ctx, count, recipients) {
  const t0 = Date.now();
  const txs = [];
  let lastLog = t0;
  const before = await tokenBalance(rpc, ctx, recipients[0]);
  for (let i = 0; i < count; i++) {
    const to = recipients[i % recipients.length];
    const t = await sendTransfer(rpc, ctx, to, `transfer ${i + 1} of ${count}`);
    if (txs.length > 0 && t.block !== txs[txs.length - 1].block + 1)
      throw new Error(
        `transfer ${i + 1} is in block ${t.block}, the one before in ${txs[txs.length - 1].block}: not one per block`,
      );
    txs.push({ ...t, to });
    if (Date.now() - lastLog > 30_000) {
      lastLog = Date.now();
      log(`  … ${fmtInt(i + 1)} transfers sent`);
    }
  }
  const want = before + BigInt(Math.ceil(count / recipients.length));
  if ((await tokenBalance(rpc, ctx, recipients[0])) !== want)
    throw new Error(`the first recipient's token balance is not ${want}`);
  return { txs, seconds: (Date.now() - t0) / 1000 };
}

/**
 * Mines `n` empty blocks: one call per chunk where the node has one (anvil_mine, Ganache's
 * evm_mine {blocks}), else batches of evm_mine. Checks the head after each chunk.
 * Stops (throws) when the blocks mined so far say the whole would take more than `budget`.
 */
async function mineEmpty(rpc, server, n, state) {
  const many = opts.evmMine ? undefined : MINE_MANY[server.id];
  const chunk = many ? many.chunk : MINE_BATCH;
  let head = Number(await rpc.call("eth_blockNumber"));
  for (let done = 0; done < n; ) {
    const k = Math.min(chunk, n - done);
    if (many) await rpc.call(many.method, many.params(k), 600_000);
    else {
      const batch = Array.from({ length: k }, (_, i) => ({
        jsonrpc: "2.0",
        id: i + 1,
        method: "evm_mine",
        params: [],
      }));
      const res = await rpc.raw(JSON.stringify(batch), 600_000);
      const answers = JSON.parse(res.text);
      if (!Array.isArray(answers) || answers.length !== k || answers.some((a) => a.error))
        throw new Error(`a batch of ${k} evm_mine: ${res.text.slice(0, 200)}`);
    }
    const now = Number(await rpc.call("eth_blockNumber"));
    if (now !== head + k)
      throw new Error(`mining ${k} blocks moved the head from ${head} to ${now}`);
    head = now;
    done += k;
    state.mined += k;
    const elapsed = (Date.now() - state.t0) / 1000;
    const rate = state.mined / elapsed;
    if ((elapsed > 5 && state.total / rate > opts.rareBudget) || elapsed > opts.rareBudget)
      throw Object.assign(
        new Error(
          `too slow to build: ${fmtInt(rate)} empty blocks/s, so ${fmtInt(state.total)} would take ~${fmtInt(state.total / rate)} s (--rare-budget ${opts.rareBudget})`,
        ),
        { tooSlow: true },
      );
    if (Date.now() - state.lastLog > 30_000) {
      state.lastLog = Date.now();
      log(`  … ${fmtInt(state.mined)} of ${fmtInt(state.total)} empty blocks mined`);
    }
  }
}

/**
 * The rare-topic chain (set-up, not measured): extends the chain to --rare-blocks (at least
 * --rare-logs more blocks) with empty blocks and --rare-logs transfers to RARE_TO, evenly
 * spaced. {range: [from, to], txs: [{hash, block}], seconds, emptyBlocks}
 */
async function buildRare(rpc, ctx, server) {
  const t0 = Date.now();
  ctx.gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const head0 = Number(await rpc.call("eth_blockNumber"));
  const length = Math.max(opts.rareBlocks - head0, opts.rareLogs);
  const positions = Array.from({ length: opts.rareLogs }, (_, k) =>
    Math.max(k + 1, Math.round(((k + 1) * length) / (opts.rareLogs + 1))),
  );
  const state = { mined: 0, total: length - opts.rareLogs, t0, lastLog: t0 };
  const txs = [];
  let cur = head0;
  for (const [k, pos] of positions.entries()) {
    await mineEmpty(rpc, server, head0 + pos - 1 - cur, state);
    const t = await sendTransfer(rpc, ctx, RARE_TO, `rare transfer ${k + 1}`);
    if (t.block !== head0 + pos)
      throw new Error(`rare transfer ${k + 1} is in block ${t.block}, expected ${head0 + pos}`);
    txs.push(t);
    cur = t.block;
  }
  await mineEmpty(rpc, server, head0 + length - cur, state);
  const head = Number(await rpc.call("eth_blockNumber"));
  if (head !== head0 + length) throw new Error(`head ${head}, expected ${head0 + length}`);
  if ((await tokenBalance(rpc, ctx, RARE_TO)) !== BigInt(opts.rareLogs))
    throw new Error(`the rare recipient's token balance is not ${opts.rareLogs}`);
  const from = Math.max(0, head - opts.rareBlocks + 1);
  return {
    range: [from, head],
    txs,
    emptyBlocks: state.mined,
    seconds: (Date.now() - t0) / 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// eth_getLogs, timed

/**
 * Checks one answer of eth_getLogs against `expected` ([{hash, block}] in chain order) and the
 * filter: every log is the token's Transfer to `to`, in that transaction and block.
 */
function checkLogs(result, expected, filter, to) {
  if (!Array.isArray(result))
    throw new Error(`not an array: ${JSON.stringify(result).slice(0, 200)}`);
  if (result.length !== expected.length)
    throw new Error(`${result.length} logs, expected ${expected.length}`);
  for (const [i, l] of result.entries()) {
    const e = expected[i];
    if (
      l?.transactionHash?.toLowerCase() !== e.hash ||
      Number(l.blockNumber) !== e.block ||
      (filter.address && l.address?.toLowerCase() !== filter.address) ||
      l.topics?.[0] !== TRANSFER_TOPIC ||
      l.topics?.[2]?.toLowerCase() !== word(to) ||
      BigInt(l.data) !== 1n ||
      l.removed === true
    )
      throw new Error(
        `log ${i}: ${JSON.stringify(l).slice(0, 300)}, expected transaction ${e.hash} in block ${e.block}`,
      );
  }
}

/**
 * One eth_getLogs checked, then timed `opts.queries` times one after another on one keep-alive
 * connection (at most --query-seconds, at least 3); every timed answer must be the checked body.
 */
async function timeGetLogs(rpc, handle, filter, expected, to) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [filter] });
  const s0 = process.hrtime.bigint();
  const first = await rpc.raw(body, 600_000);
  const firstMs = Number(process.hrtime.bigint() - s0) / 1e6;
  let json;
  try {
    json = JSON.parse(first.text);
  } catch {
    throw new Error(`HTTP ${first.status}, not JSON: ${first.text.slice(0, 200)}`);
  }
  if (json?.error) return { error: json.error, body };
  if (json?.jsonrpc !== "2.0" || json.id !== 1 || !("result" in json))
    throw new Error(`not a JSON-RPC 2.0 answer: ${first.text.slice(0, 200)}`);
  checkLogs(json.result, expected, filter, to);
  const latencies = new Latencies();
  const times = [];
  let mismatches = 0;
  const window = cpuWindow(handle.pid);
  const t0 = Date.now();
  while (
    times.length < opts.queries &&
    (times.length < 3 || Date.now() - t0 < opts.querySeconds * 1000)
  ) {
    const s = process.hrtime.bigint();
    const res = await rpc.raw(body, 600_000);
    const ms = Number(process.hrtime.bigint() - s) / 1e6;
    latencies.push(ms);
    times.push(ms);
    if (res.text !== first.text) mismatches++;
  }
  const cpu = window.end(times.length);
  const l = latencies.summary();
  const sorted = times.slice().sort((a, b) => a - b);
  const p95 = sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)];
  if (mismatches > 0)
    throw new Error(`${mismatches} of ${times.length} answers differ from the checked one`);
  return {
    filter,
    logs: json.result.length,
    bytes: Buffer.byteLength(first.text),
    firstMs,
    queries: times.length,
    medianMs: l.p50,
    p95Ms: p95,
    maxMs: l.max,
    timesMs: times,
    ...cpu,
    serverMsPerQuery: cpu.serverCPU ? (cpu.serverCPU.seconds * 1000) / times.length : null,
  };
}

/** The windows' distances below the last dense block: varied (a fixed xorshift sequence), 0..span. */
function denseOffsets(count, span) {
  let x = 0x9e3779b9;
  return Array.from({ length: count }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % (span + 1);
  });
}

/**
 * The dense figure: eth_getLogs by address and topic over windows of --dense-window blocks
 * where every other block holds a match, each window ending at another block among the last
 * --dense-span + 1, sent with fetch (undici's, one keep-alive connection, one at a time), as a
 * script would. The first answer is timed apart (1st ms); each answer is checked after its time
 * is taken (count, transaction, block and topics of every log).
 */
async function timeDense(port, handle, ctx, txs) {
  const url = `http://127.0.0.1:${port}/`;
  const last = txs[txs.length - 1].block;
  const matches = txs.filter((t) => t.to === DENSE_TO[0]);
  const topic = word(DENSE_TO[0]);
  const offsets = denseOffsets(opts.denseQueries + 1, opts.denseSpan);
  const times = [];
  let firstMs;
  let logs;
  let bytes = 0;
  let window;
  const t0 = Date.now();
  for (const [q, offset] of offsets.entries()) {
    if (q > 3 && Date.now() - t0 > opts.querySeconds * 1000) break;
    if (q === 1) window = cpuWindow(handle.pid);
    const to = last - offset;
    const from = to - opts.denseWindow + 1;
    const filter = {
      fromBlock: hex(from),
      toBlock: hex(to),
      address: ctx.token,
      topics: [TRANSFER_TOPIC, null, topic],
    };
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: q + 1,
      method: "eth_getLogs",
      params: [filter],
    });
    const s = process.hrtime.bigint();
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const text = await res.text();
    const ms = Number(process.hrtime.bigint() - s) / 1e6;
    if (q === 0) firstMs = ms;
    else times.push(ms);
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`query ${q + 1}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    if (json?.error) return { error: json.error, filter };
    if (json?.jsonrpc !== "2.0" || json.id !== q + 1 || !("result" in json))
      throw new Error(`query ${q + 1}: not a JSON-RPC 2.0 answer: ${text.slice(0, 200)}`);
    const expected = matches.filter((t) => t.block >= from && t.block <= to);
    try {
      checkLogs(json.result, expected, filter, DENSE_TO[0]);
    } catch (err) {
      throw new Error(`query ${q + 1} (blocks ${from}..${to}): ${err.message}`);
    }
    logs ??= json.result.length;
    bytes = Math.max(bytes, Buffer.byteLength(text));
  }
  const cpu = window.end(times.length);
  const l = new Latencies();
  for (const t of times) l.push(t);
  const sum = l.summary();
  return {
    window: opts.denseWindow,
    span: opts.denseSpan,
    logs,
    bytes,
    firstMs,
    queries: times.length,
    medianMs: sum.p50,
    p95Ms: percentile(times, 95),
    p99Ms: sum.p99,
    maxMs: sum.max,
    timesMs: times,
    ...cpu,
    serverMsPerQuery: cpu.serverCPU ? (cpu.serverCPU.seconds * 1000) / times.length : null,
  };
}

function percentile(values, p) {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// ---------------------------------------------------------------------------------------------
// newHeads over WebSocket

let WebSocket;

/** Opens one WebSocket to ws://127.0.0.1:port; rejects with why the upgrade failed. */
function openSocket(port, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, {
      perMessageDeflate: false,
      // The bench reads 1,000 notifications per block: spare it the UTF-8 check of each.
      skipUTF8Validation: true,
      handshakeTimeout: timeoutMs,
    });
    ws.once("open", () => {
      ws.removeAllListeners("error");
      ws.on("error", () => {});
      resolve(ws);
    });
    ws.once("unexpected-response", (req, res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        req.destroy();
        const text = Buffer.concat(chunks).toString("utf8").trim().slice(0, 120);
        reject(new Error(`the upgrade got HTTP ${res.statusCode}${text ? `: ${text}` : ""}`));
      });
      res.on("error", () => {
        req.destroy();
        reject(new Error(`the upgrade got HTTP ${res.statusCode}`));
      });
    });
    ws.once("error", (err) => reject(new Error(`the upgrade failed: ${err.message}`)));
  });
}

/** eth_subscribe ["newHeads"] on `ws`: the subscription id. */
function subscribe(ws, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no answer to eth_subscribe within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    ws.once("message", (data) => {
      clearTimeout(timer);
      let json;
      try {
        json = JSON.parse(String(data));
      } catch {
        return reject(new Error(`eth_subscribe answered non-JSON: ${String(data).slice(0, 200)}`));
      }
      if (json.error) return reject(new Error(`eth_subscribe: ${JSON.stringify(json.error)}`));
      if (json.id !== 1 || typeof json.result !== "string")
        return reject(new Error(`eth_subscribe answered ${String(data).slice(0, 200)}`));
      resolve(json.result);
    });
    ws.send('{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}');
  });
}

/**
 * --subscribers connections subscribed to newHeads, then --heads blocks mined one at a time with
 * evm_mine over HTTP: for each, ms from sending evm_mine to the first and the last
 * notification; every notification is checked against the node's block (number, hash).
 */
async function runHeads(rpc, handle, port) {
  let probe;
  try {
    probe = await openSocket(port, 5000);
  } catch (err) {
    return { noWebSocket: true, reason: err.message };
  }
  const sockets = [probe];
  const subs = [];
  try {
    const t0 = Date.now();
    while (sockets.length < opts.subscribers) {
      const wave = Math.min(100, opts.subscribers - sockets.length);
      sockets.push(...(await Promise.all(Array.from({ length: wave }, () => openSocket(port)))));
    }
    const ids = [];
    for (let i = 0; i < sockets.length; i += 100)
      ids.push(...(await Promise.all(sockets.slice(i, i + 100).map((ws) => subscribe(ws)))));
    if (new Set(ids).size !== ids.length)
      throw new Error("two subscriptions got the same id on different connections");
    const connectMs = Date.now() - t0;
    log(
      `  ${fmtInt(sockets.length)} WebSocket connections subscribed to newHeads in ${(connectMs / 1000).toFixed(1)} s`,
    );

    // Per connection: the notification of the current block, and when it came.
    let round;
    for (const [i, ws] of sockets.entries()) {
      const sub = { id: ids[i], got: undefined, at: 0n, extra: 0 };
      subs.push(sub);
      ws.on("message", (data) => {
        const at = process.hrtime.bigint();
        if (!round || sub.got !== undefined) {
          sub.extra++;
          return;
        }
        sub.got = data;
        sub.at = at;
        if (++round.count === sockets.length) {
          round.cpu = process.cpuUsage(round.cpu0);
          round.done();
        }
      });
      ws.on("close", () => {
        if (round && sub.got === undefined) round.fail(new Error(`connection ${i} closed`));
      });
    }
    const blocks = [];
    const first = new Latencies();
    const last = new Latencies();
    const mine = new Latencies();
    const clientDelivery = new Latencies();
    const window = cpuWindow(handle.pid);
    for (let b = 0; b < opts.heads; b++) {
      const head = Number(await rpc.call("eth_blockNumber"));
      for (const s of subs) s.got = undefined;
      let done;
      let fail;
      const all = new Promise((resolve, reject) => {
        done = resolve;
        fail = reject;
      });
      round = { count: 0, done, fail, cpu0: process.cpuUsage() };
      const t = process.hrtime.bigint();
      await rpc.call("evm_mine");
      const mineMs = Number(process.hrtime.bigint() - t) / 1e6;
      const timer = setTimeout(
        () =>
          fail(
            new Error(
              `${round.count} of ${subs.length} subscribers saw block ${head + 1} within 30 s`,
            ),
          ),
        30_000,
      );
      let clientMs;
      try {
        await all;
        clientMs = (round.cpu.user + round.cpu.system) / 1000;
      } finally {
        clearTimeout(timer);
        round = undefined;
      }
      const block = await rpc.call("eth_getBlockByNumber", [hex(head + 1), false]);
      if (!block) throw new Error(`no block ${head + 1} after evm_mine`);
      let min = Number.POSITIVE_INFINITY;
      let max = 0;
      for (const [i, s] of subs.entries()) {
        const n = JSON.parse(String(s.got));
        const r = n?.params?.result;
        if (
          n?.method !== "eth_subscription" ||
          n.params?.subscription !== s.id ||
          Number(r?.number) !== head + 1 ||
          r?.hash?.toLowerCase() !== block.hash.toLowerCase() ||
          r?.parentHash?.toLowerCase() !== block.parentHash.toLowerCase()
        )
          throw new Error(
            `subscriber ${i}, block ${head + 1} (${block.hash}): ${String(s.got).slice(0, 300)}`,
          );
        const ms = Number(s.at - t) / 1e6;
        if (ms < min) min = ms;
        if (ms > max) max = ms;
      }
      first.push(min);
      last.push(max);
      mine.push(mineMs);
      clientDelivery.push(clientMs);
      blocks.push({
        number: head + 1,
        hash: block.hash,
        mineMs,
        firstMs: min,
        lastMs: max,
        clientCPUMs: clientMs,
      });
    }
    const cpu = window.end(opts.heads);
    const extra = subs.reduce((n, s) => n + s.extra, 0);
    if (extra > 0) throw new Error(`${extra} notifications beyond one per block and subscriber`);
    const sortedLast = blocks.map((b) => b.lastMs).sort((a, b) => a - b);
    return {
      subscribers: sockets.length,
      connectMs,
      blocks: blocks.length,
      first: first.summary(),
      last: last.summary(),
      lastP95: sortedLast[Math.min(sortedLast.length - 1, Math.ceil(0.95 * sortedLast.length) - 1)],
      mine: mine.summary(),
      // The bench's own CPU from sending evm_mine to the last notification, per block.
      clientDeliveryCPUMs: clientDelivery.summary(),
      perBlock: blocks,
      ...cpu,
    };
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}

// ---------------------------------------------------------------------------------------------
// Per node

let tmp;
const cleanupSync = installCleanup(() => {
  if (tmp) {
    rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  }
});

async function benchNode(server, run) {
  const port = await freePort();
  const logFile = join(tmp, `${server.id}.log`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  const rpc = new RPCClient(port);
  try {
    if (!handle || run.skipped) return;
    let ctx;
    if (figureIds.some((f) => f === "getlogs" || f === "dense" || f === "rare")) {
      try {
        ctx = await prepareChain(rpc, run);
      } catch (err) {
        run.skipped = `set-up failed: ${err.message}`;
        log(`  ${run.skipped}`);
        return;
      }
    }
    if (figureIds.includes("getlogs") && !handle.done) {
      try {
        const chain = await buildTransfers(rpc, ctx, opts.blocks, RECIPIENTS);
        const last = chain.txs[chain.txs.length - 1].block;
        run.results.transfers = {
          count: chain.txs.length,
          firstBlock: chain.txs[0].block,
          lastBlock: last,
          seconds: chain.seconds,
        };
        log(
          `  ${fmtInt(chain.txs.length)} ERC-20 transfers in blocks ${chain.txs[0].block}..${last}, one per block, in ${chain.seconds.toFixed(1)} s (set-up, not measured)`,
        );
        for (const n of RANGES) {
          const from = last - n + 1;
          const to = RECIPIENTS[0];
          const filter = {
            fromBlock: hex(from),
            toBlock: hex(last),
            address: ctx.token,
            topics: [TRANSFER_TOPIC, null, word(to)],
          };
          const expected = chain.txs.filter((t) => t.block >= from && t.to === to);
          const id = `getlogs${n}`;
          try {
            const m = await timeGetLogs(rpc, handle, filter, expected, to);
            run.results[id] = m;
            if (m.error) log(`  ${id.padEnd(11)} error answer: ${JSON.stringify(m.error)}`);
            else log(`  ${id.padEnd(11)} ${queryLine(m)}`);
          } catch (err) {
            run.results[id] = { failed: err.message };
            log(`  ${id.padEnd(11)} failed: ${err.message}`);
          }
        }
      } catch (err) {
        run.results.transfers = { failed: err.message };
        log(`  transfers failed: ${err.message}`);
      }
    }
    if (figureIds.includes("dense") && !handle.done) {
      try {
        const chain = await buildTransfers(rpc, ctx, DENSE_BLOCKS, DENSE_TO);
        const last = chain.txs[chain.txs.length - 1].block;
        run.results.denseChain = {
          count: chain.txs.length,
          firstBlock: chain.txs[0].block,
          lastBlock: last,
          seconds: chain.seconds,
        };
        log(
          `  ${fmtInt(chain.txs.length)} ERC-20 transfers to two recipients in turn, blocks ${chain.txs[0].block}..${last} (set-up, not measured)`,
        );
        const m = await timeDense(port, handle, ctx, chain.txs);
        run.results.dense = m;
        if (m.error) log(`  dense       error answer: ${JSON.stringify(m.error)}`);
        else log(`  dense       ${queryLine(m)}`);
      } catch (err) {
        run.results.dense = { failed: err.message };
        log(`  dense       failed: ${err.message}`);
      }
    }
    if (figureIds.includes("rare") && !handle.done) {
      try {
        const rare = await buildRare(rpc, ctx, server);
        run.results.rareChain = {
          range: rare.range,
          blocks: rare.txs.map((t) => t.block),
          emptyBlocks: rare.emptyBlocks,
          seconds: rare.seconds,
        };
        log(
          `  chain extended to ${fmtInt(rare.range[1])} blocks: ${fmtInt(rare.emptyBlocks)} empty, ${rare.txs.length} with the rare topic (blocks ${rare.txs.map((t) => t.block).join(", ")}), in ${rare.seconds.toFixed(1)} s (set-up, not measured)`,
        );
        const filter = {
          fromBlock: hex(rare.range[0]),
          toBlock: hex(rare.range[1]),
          topics: [TRANSFER_TOPIC, null, word(RARE_TO)],
        };
        try {
          const m = await timeGetLogs(rpc, handle, filter, rare.txs, RARE_TO);
          run.results.rare = { ...m, range: rare.range, buildSeconds: rare.seconds };
          if (m.error) log(`  rare        error answer: ${JSON.stringify(m.error)}`);
          else log(`  rare        ${queryLine(m)}`);
        } catch (err) {
          run.results.rare = { failed: err.message };
          log(`  rare        failed: ${err.message}`);
        }
      } catch (err) {
        run.results.rare = err.tooSlow ? { tooSlow: err.message } : { failed: err.message };
        log(`  rare chain ${err.tooSlow ? "not built" : "failed"}: ${err.message}`);
      }
    }
    if (figureIds.includes("heads") && !handle.done) {
      try {
        const m = await runHeads(rpc, handle, port);
        run.results.heads = m;
        if (m.noWebSocket) log(`  heads       no WebSocket: ${m.reason}`);
        else
          log(
            `  heads       ${m.blocks} blocks to ${fmtInt(m.subscribers)} subscribers: last p50 ${fmtMs(m.last.p50)} ms p95 ${fmtMs(m.lastP95)} ms, first p50 ${fmtMs(m.first.p50)} ms, evm_mine p50 ${fmtMs(m.mine.p50)} ms` +
              `  server CPU ${pct(m.serverCPU?.share)}  client CPU ${pct(m.clientCPU.share)}  other CPU ${pct(m.otherCPU?.share)}`,
          );
      } catch (err) {
        run.results.heads = { failed: err.message };
        log(`  heads       failed: ${err.message}`);
      }
    }
    if (handle.done) {
      run.note = "the node exited during the run";
      log(`  ${run.note}\n${indent(readTail(logFile, 8), "      | ")}`);
    }
  } catch (err) {
    run.skipped = `bench error: ${err.message}`;
    log(`  ${run.skipped}`);
  } finally {
    rpc.close();
    await stopChild(handle);
  }
}

/** Server CPU ms per query; /proc counts CPU in ticks (10 ms), so a total under 10 ticks is rough. */
function cpuPerQuery(m) {
  if (!m.serverCPU) return "?";
  const tick = 1000 / CLK_TCK;
  if (m.serverCPU.seconds === 0) return `< ${fmtMs(tick / m.queries)}`;
  return `${m.serverCPU.seconds * 1000 < 10 * tick ? "~" : ""}${fmtMs(m.serverMsPerQuery)}`;
}

function queryLine(m) {
  return (
    `${fmtInt(m.logs)} logs (${fmtInt(m.bytes)} B): median ${fmtMs(m.medianMs)} ms, p95 ${fmtMs(m.p95Ms)} ms${m.p99Ms === undefined ? "" : `, p99 ${fmtMs(m.p99Ms)} ms`} over ${m.queries} queries (first ${fmtMs(m.firstMs)} ms)` +
    `  server ${cpuPerQuery(m)} ms CPU/query  client CPU ${pct(m.clientCPU.share)}  other CPU ${pct(m.otherCPU?.share)}`
  );
}

// ---------------------------------------------------------------------------------------------
// Output

const OTHER_CPU_NOTE = 0.15;

function pct(share) {
  return share === undefined || share === null ? "?" : `${Math.round(share * 100)}%`;
}
/** Nodex's time ÷ the peer's: above 1× Nodex is slower. */
function ratio(nodex, peer) {
  if (!nodex || !peer) return "—";
  const r = nodex / peer;
  return `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}
function noisy(name, m, notes) {
  if (m?.otherCPU && m.otherCPU.share > OTHER_CPU_NOTE)
    notes.push(
      `  ${name}: other processes used ${pct(m.otherCPU.share)} of a core during the measurement: figures are noisy`,
    );
}

function printTable(title, headers, rows, notes) {
  log("");
  log(`== ${title} ==`);
  log("");
  if (rows.length > 0)
    log(
      table(
        headers,
        rows,
        headers.map((_, i) => (i < 2 ? "l" : "r")),
      ),
    );
  else log("(no node measured)");
  if (notes.length > 0) {
    log("");
    log("notes:");
    for (const n of notes) log(n);
  }
}

/** Why a figure has no value for this run (one line), or undefined. */
function missing(run, m) {
  if (run.skipped) return firstLines(run.skipped, 1);
  if (!m) return "not run";
  if (m.error) return `error answer ${JSON.stringify(m.error)}`;
  if (m.failed) return firstLines(m.failed, 1);
  if (m.tooSlow) return m.tooSlow;
  return undefined;
}

function queryRows(id, runs, extra = () => [], queries = opts.queries) {
  const nodex = runs.find((r) => r.server.kind === "nodex")?.results[id];
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results[id];
    const name = run.server.label;
    const why = missing(run, m);
    if (why) {
      rows.push([
        name,
        run.version ?? "",
        m?.tooSlow ? "not built" : "—",
        "",
        "",
        "",
        "",
        ...extra(),
        "",
      ]);
      notes.push(`  ${name}: ${why}`);
      continue;
    }
    rows.push([
      name,
      run.version ?? "",
      fmtInt(m.logs),
      fmtMs(m.medianMs),
      fmtMs(m.p95Ms),
      fmtMs(m.firstMs),
      cpuPerQuery(m),
      ...extra(m),
      ratio(nodex?.medianMs, m.medianMs),
    ]);
    if (m.queries < queries)
      notes.push(`  ${name}: ${m.queries} queries (--query-seconds ${opts.querySeconds} reached)`);
    noisy(name, m, notes);
  }
  return { rows, notes };
}

function printGetLogs(n, runs) {
  const id = `getlogs${n}`;
  const { rows, notes } = queryRows(id, runs);
  printTable(
    `eth_getLogs by the token's address and the Transfer topic of one of ${opts.recipients} recipients, over the last ${fmtInt(n)} one-transfer blocks (${opts.queries} queries, one at a time; Nodex ÷ this: median ms, above 1× Nodex is slower)`,
    [
      "node",
      "version",
      "logs",
      "median ms",
      "p95 ms",
      "1st ms",
      "srv CPU ms/query",
      "Nodex ÷ this",
    ],
    rows,
    notes,
  );
}

function printDense(runs) {
  const { rows, notes } = queryRows(
    "dense",
    runs,
    (m) => (m ? [fmtMs(m.p99Ms)] : [""]),
    opts.denseQueries,
  );
  printTable(
    `eth_getLogs by the token's address and the Transfer topic of one of 2 recipients in turn, over ${fmtInt(opts.denseWindow)} blocks ending among the last ${fmtInt(opts.denseSpan + 1)} (${opts.denseQueries} windows, fetch, one at a time; Nodex ÷ this: median ms, above 1× Nodex is slower)`,
    [
      "node",
      "version",
      "logs",
      "median ms",
      "p95 ms",
      "1st ms",
      "srv CPU ms/query",
      "p99 ms",
      "Nodex ÷ this",
    ],
    rows,
    notes,
  );
}

function printRare(runs) {
  const { rows, notes } = queryRows("rare", runs, (m) =>
    m ? [fmtInt(m.range[1] - m.range[0] + 1), fmtInt(m.buildSeconds)] : ["", ""],
  );
  printTable(
    `eth_getLogs by a topic in ${opts.rareLogs} blocks of the whole chain (up to ${fmtInt(opts.rareBlocks)} blocks, no address; Nodex ÷ this: median ms, above 1× Nodex is slower)`,
    [
      "node",
      "version",
      "logs",
      "median ms",
      "p95 ms",
      "1st ms",
      "srv CPU ms/query",
      "blocks",
      "build s",
      "Nodex ÷ this",
    ],
    rows,
    notes,
  );
}

function printHeads(runs) {
  const nodex = runs.find((r) => r.server.kind === "nodex")?.results.heads;
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results.heads;
    const name = run.server.label;
    if (m?.noWebSocket) {
      rows.push([name, run.version ?? "", "no WebSocket", "", "", "", "", "", "", ""]);
      notes.push(`  ${name}: ws://127.0.0.1:<port>: ${m.reason}`);
      continue;
    }
    const why = missing(run, m);
    if (why) {
      rows.push([name, run.version ?? "", "—", "", "", "", "", "", "", ""]);
      notes.push(`  ${name}: ${why}`);
      continue;
    }
    rows.push([
      name,
      run.version ?? "",
      fmtInt(m.subscribers),
      fmtMs(m.last.p50),
      fmtMs(m.lastP95),
      fmtMs(m.first.p50),
      fmtMs(m.mine.p50),
      m.serverCPU ? fmtMs((m.serverCPU.seconds * 1000) / m.blocks) : "?",
      fmtMs(m.clientDeliveryCPUMs.p50),
      nodex?.last ? ratio(nodex.last.p50, m.last.p50) : "—",
    ]);
    noisy(name, m, notes);
    // The bench reads every notification itself: when its CPU between evm_mine and the last
    // notification comes near "last", the client, not the node, sets the figure.
    if (m.clientDeliveryCPUMs.p50 > 0.5 * m.last.p50)
      notes.push(
        `  ${name}: the bench itself used ${fmtMs(m.clientDeliveryCPUMs.p50)} ms of CPU (p50) between sending evm_mine and the last notification (the HTTP call, reading ${fmtInt(m.subscribers)} frames): "last" is partly the client's`,
      );
  }
  printTable(
    `newHeads over WebSocket: ${opts.heads} blocks mined one at a time with evm_mine, ${fmtInt(opts.subscribers)} subscribers (ms from sending evm_mine; Nodex ÷ this: last p50, above 1× Nodex is slower)`,
    [
      "node",
      "version",
      "subscribers",
      "last p50 ms",
      "last p95 ms",
      "first p50 ms",
      "evm_mine p50 ms",
      "srv CPU ms/block",
      "bench CPU to last, ms",
      "Nodex ÷ this",
    ],
    rows,
    notes,
  );
}

/** One row per figure, one column per node, then Nodex ÷ each peer (all times: above 1× Nodex is slower). */
function printSummary(runs) {
  const nodexRun = runs.find((r) => r.server.kind === "nodex");
  const peers = runs.filter((r) => r.server.kind !== "nodex");
  const figures = [];
  const ok = (m) => (m && !m.error && !m.failed && !m.tooSlow && !m.noWebSocket ? m : undefined);
  if (figureIds.includes("getlogs"))
    for (const n of RANGES) {
      const id = `getlogs${n}`;
      figures.push(
        {
          label: `eth_getLogs ${fmtInt(n)} blocks, median ms`,
          get: (r) => ok(r.results[id])?.medianMs,
        },
        { label: `eth_getLogs ${fmtInt(n)} blocks, p95 ms`, get: (r) => ok(r.results[id])?.p95Ms },
      );
    }
  if (figureIds.includes("dense"))
    figures.push(
      {
        label: `dense, ${fmtInt(opts.denseWindow)} blocks, median ms`,
        get: (r) => ok(r.results.dense)?.medianMs,
      },
      {
        label: `dense, ${fmtInt(opts.denseWindow)} blocks, p99 ms`,
        get: (r) => ok(r.results.dense)?.p99Ms,
      },
    );
  if (figureIds.includes("rare")) {
    const cell = (r) => (r.results.rare?.tooSlow ? "not built" : undefined);
    figures.push(
      {
        label: `rare topic, ${fmtInt(opts.rareBlocks)} blocks, median ms`,
        get: (r) => ok(r.results.rare)?.medianMs,
        cell,
      },
      {
        label: `rare topic, ${fmtInt(opts.rareBlocks)} blocks, p95 ms`,
        get: (r) => ok(r.results.rare)?.p95Ms,
        cell,
      },
    );
  }
  if (figureIds.includes("heads")) {
    const cell = (r) => (r.results.heads?.noWebSocket ? "no WebSocket" : undefined);
    figures.push(
      {
        label: `newHeads to ${fmtInt(opts.subscribers)}, last p50 ms`,
        get: (r) => ok(r.results.heads)?.last.p50,
        cell,
      },
      {
        label: `newHeads to ${fmtInt(opts.subscribers)}, last p95 ms`,
        get: (r) => ok(r.results.heads)?.lastP95,
        cell,
      },
      {
        label: `newHeads to ${fmtInt(opts.subscribers)}, first p50 ms`,
        get: (r) => ok(r.results.heads)?.first.p50,
        cell,
      },
    );
  }
  const headers = [
    "figure",
    ...runs.map((r) => r.server.label),
    ...peers.map((p) => `Nodex ÷ ${p.server.label}`),
  ];
  const rows = figures.map((f) => {
    const cell = (run) => {
      const v = f.get(run);
      if (v === undefined || v === null) return f.cell?.(run) ?? "—";
      return fmtMs(v);
    };
    const nv = nodexRun ? f.get(nodexRun) : undefined;
    return [f.label, ...runs.map(cell), ...peers.map((p) => ratio(nv, f.get(p)))];
  });
  log("");
  log("== Summary: times in ms; Nodex ÷ peer above 1× means Nodex is slower ==");
  log("");
  log(
    table(
      headers,
      rows,
      headers.map((_, i) => (i === 0 ? "l" : "r")),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Nodex CPU profiles (--nodex-cpu-prof)

/** Each thread's profile kept in bench/results/, its top functions and packages printed. */
function reportProfiles(resultsDir, stamp) {
  let files = [];
  try {
    files = readdirSync(PROFILE_DIR).filter((f) => f.endsWith(".cpuprofile"));
  } catch {}
  if (files.length === 0) log("\n  Nodex: no CPU profile was written (did it exit cleanly?)");
  for (const [i, f] of files.sort().entries()) {
    const dest = join(resultsDir, `logs-${stamp}-nodex-${i}.cpuprofile`);
    writeFileSync(dest, readFileSync(join(PROFILE_DIR, f)));
    const s = summarizeProfile(dest, 25);
    log("");
    log(
      `== Nodex CPU profile ${i + 1} of ${files.length}: ${fmtInt(s.busyMs)} ms busy, ${fmtInt(s.idleMs)} ms idle (${relative(root, dest)}) ==`,
    );
    log("");
    for (const [what, rows] of [
      ["function", s.functions],
      ["package", s.areas],
    ])
      log(
        `${table(
          ["self ms", "share", what],
          rows.map((r) => [fmtInt(r.ms), `${(r.share * 100).toFixed(1)}%`, r.name]),
          ["r", "r", "l"],
        )}\n`,
      );
  }
  rmSync(PROFILE_DIR, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  ensureBenchDeps(["ethers", "solc", "ws"]);
  const ethers = await loadEthers();
  WebSocket = (await import("ws")).WebSocket;
  if (selected.some((s) => s.kind === "nodex")) ensureNodexBuilt(args.build);
  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-logs-"));
  const t0 = Date.now();
  token = compileToken();
  const cpu = cpus();
  log(
    `Logs bench: ${selected.length} nodes; ${figureIds.join(", ")}; ${fmtInt(opts.blocks)} transfer blocks, ranges ${RANGES.map(fmtInt).join(" and ")}, ` +
      `dense windows of ${fmtInt(opts.denseWindow)} blocks × ${opts.denseQueries}, ` +
      `rare topic over ${fmtInt(opts.rareBlocks)} blocks, ${fmtInt(opts.subscribers)} subscribers × ${opts.heads} blocks`,
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), ethers ${ethers.version}, ws ${packageJSON("ws").json.version}, ` +
      `token compiled with solc ${token.solc.split("+")[0]} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  const runs = selected.map((server) => ({
    server: { id: server.id, label: server.label, kind: server.kind },
    version: null,
    results: {},
  }));
  for (const [i, server] of selected.entries()) {
    log("");
    log(`[${server.id}] ${server.label}`);
    const s = Date.now();
    await benchNode(server, runs[i]);
    runs[i].seconds = (Date.now() - s) / 1000;
    log(`  (${fmtInt(runs[i].seconds)} s)`);
  }

  if (figureIds.includes("getlogs")) for (const n of RANGES) printGetLogs(n, runs);
  if (figureIds.includes("dense")) printDense(runs);
  if (figureIds.includes("rare")) printRare(runs);
  if (figureIds.includes("heads")) printHeads(runs);
  printSummary(runs);

  if (args["nodex-cpu-prof"]) reportProfiles(resultsDir, stamp);

  const file = join(resultsDir, `logs-${stamp}.json`);
  const report = {
    bench: "logs",
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    options: { ...opts, figures: figureIds, ranges: RANGES },
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cores: cpu.length,
      cpu: cpu[0]?.model ?? null,
    },
    commit: gitCommit() ?? null,
    token: { solc: token.solc, evmVersion: "paris" },
    accounts: { from: ACCOUNT0, recipients: RECIPIENTS, rare: RARE_TO },
    runs: JSON.parse(JSON.stringify(runs, (_k, v) => (typeof v === "bigint" ? v.toString() : v))),
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
