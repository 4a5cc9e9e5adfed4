#!/usr/bin/env node
// Chain bench: a chain workload against Nodex (regtest), Hardhat's node, Ganache and Anvil, one
// node at a time, in one run: signed ETH transfers and ERC-20 transfers sent one by one with
// automine (tx/s), then eth_call, eth_getBalance, eth_getBlockByNumber (full transactions) and
// eth_getLogs under autocannon (req/s, p99); then, over a history of one-transfer blocks sent
// for them, receipts, eth_getLogs over 1,000 blocks and full blocks of old blocks (more than
// the node caches, in a shuffled order); then, with automine off, pre-signed transfers from
// several senders sent concurrently into the pool (admitted tx/s) and mined with evm_mine (ms per
// block, transactions per block). Prints each figure and the ratio Nodex ÷ peer.
//
//   node bench/chain/run.mjs                           (from the repo root)
//   node bench/chain/run.mjs --count 500 --duration 5 --only nodex,anvil
//
// See bench/README.md for what it measures and how to read the output.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
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
import { firstLines, fmtInt, fmtMs, indent, log, readTail, sleep, table } from "../lib/format.mjs";
import { freePort, LeanRPCClient, RPCClient, RPCError } from "../lib/http.mjs";
import { cpuWindow, Latencies, loadAutocannon, measure, measureClosedLoop } from "../lib/load.mjs";
import { installCleanup, stopChild } from "../lib/proc.mjs";
import { keepProfile } from "../lib/profile.mjs";
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

const WORKLOAD_IDS = [
  "eth",
  "erc20",
  "call",
  "balance",
  "block",
  "logs",
  "receipts",
  "oldlogs",
  "oldblocks",
  "pool",
];
/** The reads that need the history: a chain of one-transfer blocks, sent after the transfers. */
const HISTORY_READS = ["receipts", "oldlogs", "oldblocks"];

const USAGE = `usage: node bench/chain/run.mjs [--count N] [--duration S] [--connections N] [--warmup S] [--only a,b] [--workloads a,b] [--pool-count N] [--pool-connections N] [--history N] [--oldlogs-connections N] [--no-receipts] [--nodex-cpu-prof] [--nodex-bin PATH] [--build] [--list]

  --count N         transactions per transfer workload (ETH, ERC-20), sent one by one (default 2000)
  --duration S      seconds measured per node and read workload (default 10)
  --connections N   concurrent keep-alive connections of the read workloads (default 50)
  --warmup S        seconds of unmeasured load before each read measurement (default 2)
  --only a,b        run only these nodes (ids from --list); nodex is the ratio reference
  --workloads a,b   run only these workloads (${WORKLOAD_IDS.join(", ")})
  --pool-count N    transfers sent into the pool with automine off (default 1000)
  --pool-connections N  concurrent connections sending them (default 16)
  --history N       one-transfer blocks sent (not measured) for the old-block reads (default 2000)
  --oldlogs-connections N  connections of the eth_getLogs read over 1,000 old blocks (default 4)
  --no-receipts     in the transfer workloads, send the next transaction as soon as the node
                    answers the send, without waiting for the receipt (each receipt is awaited by
                    default, as ethers' tx.wait() does)
  --nodex-cpu-prof  run Nodex under node --cpu-prof; print its top functions, keep the profile
  --nodex-bin PATH  run this Nodex entry (another checkout's apps/node/bin/nodex.js, built there)
  --build           run \`npm run build\` first even if apps/node/dist/main.js exists
  --list            print the node and workload ids and exit
`;

let args;
try {
  args = parseArgs({
    options: {
      count: { type: "string", default: "2000" },
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      warmup: { type: "string", default: "2" },
      only: { type: "string" },
      workloads: { type: "string" },
      "pool-count": { type: "string", default: "1000" },
      "pool-connections": { type: "string", default: "16" },
      history: { type: "string", default: "2000" },
      "oldlogs-connections": { type: "string", default: "4" },
      "nodex-bin": { type: "string" },
      "no-receipts": { type: "boolean", default: false },
      "nodex-cpu-prof": { type: "boolean", default: false },
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
  count: positiveInteger("--count", args.count),
  duration: positiveNumber("--duration", args.duration),
  connections: positiveInteger("--connections", args.connections),
  warmup: nonNegativeNumber("--warmup", args.warmup),
  poolCount: positiveInteger("--pool-count", args["pool-count"]),
  poolConnections: positiveInteger("--pool-connections", args["pool-connections"]),
  history: positiveInteger("--history", args.history),
  oldLogsConnections: positiveInteger("--oldlogs-connections", args["oldlogs-connections"]),
  nodexBin: args["nodex-bin"] === undefined ? undefined : resolve(args["nodex-bin"]),
  waitReceipts: !args["no-receipts"],
  nodexCPUProfile: args["nodex-cpu-prof"],
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
// The chain side: accounts, the token, signing

/** Fresh addresses (no key, no balance anywhere), so their balances count exactly what we send. */
const ETH_TO = "0x00000000000000000000000000000000000be0c1";
const TOKEN_TO = "0x00000000000000000000000000000000000be0c2";
const HISTORY_TO = "0x00000000000000000000000000000000000be0c4";
const ETH_VALUE = 1n; // wei per ETH transfer
/** The ERC-20 workload sends to these in turn; the eth_call workload asks balanceOf of each. */
const HOLDER_COUNT = 1000;
const holder = (i) => `0x00000000000000000000000000b0${i.toString(16).padStart(12, "0")}`;
const LOG_BLOCKS = 100;
/** Blocks of the eth_getLogs range over the history (fewer if --history is smaller). */
const OLD_LOG_BLOCKS = 1000;

let ethers;
let token; // {abi, bytecode, iface, solc}

async function tokenBalance(rpc, ctx, who) {
  const data = token.iface.encodeFunctionData("balanceOf", [who]);
  return BigInt(await rpc.call("eth_call", [{ to: ctx.token, data }, "latest"]));
}

// ---------------------------------------------------------------------------------------------
// Nodes

/** The checkout a --nodex-bin entry belongs to (…/apps/node/bin/nodex.js), if it is one. */
function checkoutOf(entry) {
  const home = resolve(dirname(entry), "../../..");
  return existsSync(join(home, "apps/node/package.json")) ? home : undefined;
}

const NODES = [
  nodexServer({
    entry: opts.nodexBin ?? join(root, "apps/node/bin/nodex.js"),
    home: opts.nodexBin ? (checkoutOf(opts.nodexBin) ?? dirname(opts.nodexBin)) : root,
    nodeArgs: [], // set in main() for --nodex-cpu-prof
  }),
  hardhatPeer(),
  // Account #0 of the mnemonic funded; eager instamine: each transaction is mined into its own
  // block before eth_sendRawTransaction answers. Chain id left at its default (1337).
  ganachePeer(["--wallet.mnemonic", DEV_MNEMONIC, "--miner.instamine", "eager"]),
  anvilPeer(),
];

if (args.list) {
  for (const s of NODES) process.stdout.write(`${s.id.padEnd(10)} ${s.label} [${s.kind}]\n`);
  process.stdout.write(`workloads: ${WORKLOAD_IDS.join(", ")}\n`);
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
const workloadIds =
  args.workloads === undefined ? WORKLOAD_IDS : idList("--workloads", args.workloads, WORKLOAD_IDS);

// ---------------------------------------------------------------------------------------------
// Workloads

const WRITES = [
  {
    id: "eth",
    title: `${fmtInt(opts.count)} signed ETH transfers sent one by one, automine, ${opts.waitReceipts ? "the client signing each and awaiting its receipt" : "the client signing each, receipts not awaited"}`,
    short: "ETH transfers",
    unit: "tx/s",
    build(ctx, nonce) {
      return sign({
        chainId: ctx.chainId,
        nonce,
        gasPrice: ctx.gasPrice,
        gasLimit: GAS_TRANSFER,
        to: ETH_TO,
        value: ETH_VALUE,
      });
    },
    probe: (rpc) => rpc.call("eth_getBalance", [ETH_TO, "latest"]).then(BigInt),
    expectDelta: (n) => BigInt(n) * ETH_VALUE,
    what: "balance of the recipient",
  },
  {
    id: "erc20",
    title: `${fmtInt(opts.count)} ERC-20 transfers sent one by one, automine, ${opts.waitReceipts ? "the client signing each and awaiting its receipt" : "the client signing each, receipts not awaited"}`,
    short: "ERC-20 transfers",
    unit: "tx/s",
    build(ctx, nonce) {
      return sign({
        chainId: ctx.chainId,
        nonce,
        gasPrice: ctx.gasPrice,
        gasLimit: GAS_TOKEN_TRANSFER,
        to: ctx.token,
        // Each transfer goes to the next of the holders, so that balanceOf has 1,000 of them.
        data: token.iface.encodeFunctionData("transfer", [holder(nonce % HOLDER_COUNT), 1n]),
      });
    },
    probe: (rpc, ctx) => tokenBalance(rpc, ctx, ACCOUNT0),
    expectDelta: (n) => -BigInt(n),
    what: "token balance of the sender",
  },
];

const READS = [
  {
    id: "call",
    title: `eth_call of balanceOf on the token for ${fmtInt(HOLDER_COUNT)} holders in turn, latest`,
    short: "eth_call balanceOf",
    requests: (ctx) =>
      Array.from({ length: HOLDER_COUNT }, (_, i) => ({
        method: "eth_call",
        params: [
          { to: ctx.token, data: token.iface.encodeFunctionData("balanceOf", [holder(i)]) },
          "latest",
        ],
        expect: ctx.holderBalances.get(i) ?? 0n,
      })),
    check(result, _ctx, expect) {
      if (typeof result !== "string" || result.toLowerCase() !== word(expect))
        throw new Error(`balanceOf is ${JSON.stringify(result)}, expected ${word(expect)}`);
      return {};
    },
  },
  {
    id: "balance",
    title: "eth_getBalance(account #0, latest)",
    short: "eth_getBalance",
    request: () => ({ method: "eth_getBalance", params: [ACCOUNT0, "latest"] }),
    check(result) {
      if (typeof result !== "string" || !/^0x(0|[1-9a-f][0-9a-f]*)$/.test(result))
        throw new Error(`not a quantity: ${JSON.stringify(result)}`);
      if (BigInt(result) === 0n) throw new Error("account #0 has no balance");
      return {};
    },
  },
  {
    id: "block",
    title: "eth_getBlockByNumber(<block of the last transfer>, true)",
    short: "eth_getBlockByNumber full",
    request: (ctx) => ({ method: "eth_getBlockByNumber", params: [ctx.txBlock.number, true] }),
    check(result, ctx) {
      if (result === null || typeof result !== "object")
        throw new Error(`no block: ${JSON.stringify(result)}`);
      if (BigInt(result.number) !== BigInt(ctx.txBlock.number))
        throw new Error(`block number ${result.number}, asked ${ctx.txBlock.number}`);
      if (!Array.isArray(result.transactions) || result.transactions.length === 0)
        throw new Error("no transactions in the block");
      const tx = result.transactions.find(
        (t) => typeof t === "object" && t?.hash?.toLowerCase() === ctx.txBlock.hash,
      );
      if (!tx) throw new Error(`transaction ${ctx.txBlock.hash} not among full transactions`);
      return { transactions: result.transactions.length };
    },
  },
  {
    id: "logs",
    title: `eth_getLogs of the token over the last ${LOG_BLOCKS} blocks`,
    short: `eth_getLogs ${LOG_BLOCKS} blocks`,
    request: (ctx) => ({
      method: "eth_getLogs",
      params: [
        {
          fromBlock: hex(Math.max(0, ctx.head - (LOG_BLOCKS - 1))),
          toBlock: hex(ctx.head),
          address: ctx.token,
        },
      ],
    }),
    check(result, ctx) {
      if (!Array.isArray(result)) throw new Error(`not an array: ${JSON.stringify(result)}`);
      for (const l of result) {
        if (l?.address?.toLowerCase() !== ctx.token || l.topics?.[0] !== TRANSFER_TOPIC)
          throw new Error(`unexpected log ${JSON.stringify(l).slice(0, 200)}`);
      }
      if (result.length === 0) throw new Error("no logs");
      return { logs: result.length };
    },
  },
  // The reads of old blocks: each request of `requests` is checked once before the load; under
  // load each new request takes the next one in a fixed shuffled order that visits every history
  // transaction (or block) once per cycle, more of them than Nodex caches (256 blocks, 1,024
  // blocks' receipts), so each answer is read from the database.
  {
    id: "receipts",
    title: `eth_getTransactionReceipt of the ${fmtInt(opts.history)} history transfers, shuffled`,
    short: "eth_getTransactionReceipt old",
    requests: (ctx) =>
      shuffled(ctx.history.txs).map((t) => ({
        method: "eth_getTransactionReceipt",
        params: [t.hash],
        expect: t,
      })),
    check(result, _ctx, expect) {
      if (result === null || typeof result !== "object")
        throw new Error(`no receipt for ${expect.hash}: ${JSON.stringify(result)}`);
      if (result.transactionHash?.toLowerCase() !== expect.hash)
        throw new Error(`receipt of ${result.transactionHash}, asked ${expect.hash}`);
      if (Number(result.blockNumber) !== expect.block)
        throw new Error(`receipt in block ${Number(result.blockNumber)}, expected ${expect.block}`);
      if (result.status !== "0x1" || result.logs?.length !== 1)
        throw new Error(`receipt with status ${result.status}, ${result.logs?.length} logs`);
      return {};
    },
  },
  {
    id: "oldlogs",
    title: `eth_getLogs of the token's Transfers to one address over ${fmtInt(Math.min(OLD_LOG_BLOCKS, opts.history))} history blocks`,
    short: `eth_getLogs ${fmtInt(Math.min(OLD_LOG_BLOCKS, opts.history))} blocks`,
    // One answer is ~600 kB and takes a node from tens of ms to seconds: with 50 connections
    // the queue alone would exceed autocannon's 10 s timeout on the slower nodes, and a short
    // window could end before the first answer. So: a closed loop on a few connections that
    // counts every answer, however long it takes (measureClosedLoop).
    connections: () => opts.oldLogsConnections,
    closedLoop: true,
    request: (ctx) => ({
      method: "eth_getLogs",
      params: [
        {
          fromBlock: hex(ctx.history.logRange[0]),
          toBlock: hex(ctx.history.logRange[1]),
          address: ctx.token,
          topics: [TRANSFER_TOPIC, null, word(HISTORY_TO)],
        },
      ],
    }),
    check(result, ctx) {
      if (!Array.isArray(result)) throw new Error(`not an array: ${JSON.stringify(result)}`);
      const [from, to] = ctx.history.logRange;
      const want = ctx.history.txs.filter((t) => t.block >= from && t.block <= to).length;
      if (result.length !== want)
        throw new Error(`${result.length} logs, expected ${want} (one per history transfer)`);
      for (const l of result) {
        if (
          l?.address?.toLowerCase() !== ctx.token ||
          l.topics?.[0] !== TRANSFER_TOPIC ||
          l.topics?.[2]?.toLowerCase() !== word(HISTORY_TO)
        )
          throw new Error(`unexpected log ${JSON.stringify(l).slice(0, 200)}`);
      }
      return { logs: result.length };
    },
  },
  {
    id: "oldblocks",
    title: `eth_getBlockByNumber(<one of the ${fmtInt(opts.history)} history blocks>, true), shuffled`,
    short: "eth_getBlockByNumber full, old blocks",
    requests: (ctx) =>
      shuffled(ctx.history.txs).map((t) => ({
        method: "eth_getBlockByNumber",
        params: [hex(t.block), true],
        expect: t,
      })),
    check(result, _ctx, expect) {
      if (result === null || typeof result !== "object")
        throw new Error(`no block ${expect.block}: ${JSON.stringify(result)}`);
      if (Number(result.number) !== expect.block)
        throw new Error(`block number ${result.number}, asked ${expect.block}`);
      const txs = result.transactions;
      if (!Array.isArray(txs) || txs.length !== 1 || typeof txs[0] !== "object")
        throw new Error(`block ${expect.block} does not hold one full transaction`);
      if (txs[0].hash?.toLowerCase() !== expect.hash)
        throw new Error(`block ${expect.block} holds ${txs[0].hash}, expected ${expect.hash}`);
      if (txs[0].from?.toLowerCase() !== ACCOUNT0.toLowerCase())
        throw new Error(`transaction from ${txs[0].from}, expected ${ACCOUNT0}`);
      return { transactions: 1 };
    },
  },
];

/** A fixed shuffle (xorshift32, same seed every run), so every node gets the same order. */
function shuffled(items) {
  const out = items.slice();
  let x = 0x9e3779b9;
  for (let i = out.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = (x >>> 0) % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Per node

let tmp;
let resultsStamp;
const cleanupSync = installCleanup(() => {
  if (tmp) {
    rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  }
});

/** Chain id, gas price, funds; deploys the token and checks that it works and that the node automines. */
async function prepareChain(rpc, run) {
  const chainId = BigInt(await rpc.call("eth_chainId"));
  const gasPrice = BigInt(await rpc.call("eth_gasPrice"));
  const balance = BigInt(await rpc.call("eth_getBalance", [ACCOUNT0, "latest"]));
  let nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  const head0 = Number(await rpc.call("eth_blockNumber"));
  const need =
    gasPrice *
      (GAS_DEPLOY + GAS_TOKEN_TRANSFER + BigInt(opts.count) * (GAS_TRANSFER + GAS_TOKEN_TRANSFER)) +
    BigInt(opts.count) * ETH_VALUE +
    (workloadIds.includes("pool") ? BigInt(poolSenderCount()) * 2n * 10n ** 18n : 0n) +
    (needsHistory() ? gasPrice * BigInt(opts.history) * GAS_TOKEN_TRANSFER : 0n);
  run.chain = {
    chainId: hex(chainId),
    gasPrice: hex(gasPrice),
    account0Balance: hex(balance),
    account0Nonce: nonce,
    head: head0,
  };
  if (balance < need)
    throw new Error(
      `account #0 holds ${balance} wei, the run needs ${need} (is it funded on this node?)`,
    );
  const ctx = { chainId, gasPrice, nonce };

  // Deploy the token, then wait for its receipt without asking the node to mine: automine.
  const deploy = sign({
    chainId,
    nonce: nonce++,
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
  const head1 = Number(await rpc.call("eth_blockNumber"));
  if (head1 !== head0 + 1)
    throw new Error(`one transaction moved the head from ${head0} to ${head1}, expected +1`);
  ctx.token = receipt.contractAddress.toLowerCase();
  const code = await rpc.call("eth_getCode", [ctx.token, "latest"]);
  if (typeof code !== "string" || code.length <= 2) throw new Error("no code at the token address");

  // The token works: supply with the deployer, a transfer moves it, with a Transfer log.
  if ((await tokenBalance(rpc, ctx, ACCOUNT0)) !== TOKEN_SUPPLY)
    throw new Error("balanceOf(deployer) is not the supply");
  const first = sign({
    chainId,
    nonce: nonce++,
    gasPrice,
    gasLimit: GAS_TOKEN_TRANSFER,
    to: ctx.token,
    data: token.iface.encodeFunctionData("transfer", [TOKEN_TO, 1n]),
  });
  await rpc.call("eth_sendRawTransaction", [first.raw]);
  const r2 = await waitMined(rpc, first.hash, 10_000);
  if (r2?.status !== "0x1") throw new Error(`token transfer failed: ${JSON.stringify(r2)}`);
  if (r2.logs?.length !== 1 || r2.logs[0].topics?.[0] !== TRANSFER_TOPIC)
    throw new Error(`token transfer without its Transfer log: ${JSON.stringify(r2.logs)}`);
  if ((await tokenBalance(rpc, ctx, TOKEN_TO)) !== 1n)
    throw new Error("balanceOf(recipient) did not change after a transfer");
  if ((await tokenBalance(rpc, ctx, ACCOUNT0)) !== TOKEN_SUPPLY - 1n)
    throw new Error("balanceOf(deployer) did not change after a transfer");
  ctx.nonce = nonce;
  ctx.tokenBalance0 = TOKEN_SUPPLY - 1n;
  ctx.holderBalances = new Map();
  ctx.txBlock = { number: r2.blockNumber, hash: first.hash };
  run.chain.token = ctx.token;
  run.chain.tokenDeployGas = receipt.gasUsed;
  run.chain.tokenTransferGas = r2.gasUsed;
  log(
    `  chain id ${hex(chainId)}, gas price ${hex(gasPrice)}, account #0 funded; token deployed at ${ctx.token} (block ${Number(receipt.blockNumber)}), balanceOf and transfer checked, 1 block per tx`,
  );
  return ctx;
}

const needsHistory = () => workloadIds.some((id) => HISTORY_READS.includes(id));

/**
 * The history the old-block reads run on (set-up, not measured): --history ERC-20 transfers of
 * 1 token unit to a fresh address, each in a block of its own: each receipt is awaited before
 * the next send (so Anvil's automine race cannot put two in one block); on a node whose
 * automine stopped (Anvil after a stall) automine is turned off for good measure and each send
 * is followed by an evm_mine (then automine goes back on), so that the blocks stay contiguous.
 * {txs: [{hash, block}], logRange: [from, to], seconds, evmMine}
 */
async function buildHistory(rpc, ctx, server) {
  const t0 = Date.now();
  const before = await tokenBalance(rpc, ctx, HISTORY_TO);
  const data = token.iface.encodeFunctionData("transfer", [HISTORY_TO, 1n]);
  const txs = [];
  let evmMine = false;
  for (let i = 0; i < opts.history; i++) {
    const tx = sign({
      chainId: ctx.chainId,
      nonce: ctx.nonce + i,
      gasPrice: ctx.gasPrice,
      gasLimit: GAS_TOKEN_TRANSFER,
      to: ctx.token,
      data,
    });
    const hash = await rpc.call("eth_sendRawTransaction", [tx.raw]);
    if (String(hash).toLowerCase() !== tx.hash)
      throw new Error(
        `history transfer ${i + 1}: answered ${JSON.stringify(hash)}, expected ${tx.hash}`,
      );
    if (evmMine) await rpc.call("evm_mine");
    let receipt = await waitMined(rpc, tx.hash, 3000);
    if (!receipt && !evmMine) {
      evmMine = true;
      if (AUTOMINE[server.id]) await automine(rpc, server, false);
      await rpc.call("evm_mine");
      receipt = await waitMined(rpc, tx.hash, 3000);
    }
    if (!receipt)
      throw new Error(
        `history transfer ${i + 1} of ${opts.history} was not mined, evm_mine neither`,
      );
    if (receipt.status !== "0x1")
      throw new Error(`history transfer ${i + 1} failed: ${JSON.stringify(receipt)}`);
    const block = Number(receipt.blockNumber);
    if (txs.length > 0 && block <= txs[txs.length - 1].block)
      throw new Error(`history transfers ${i} and ${i + 1} share block ${block}`);
    txs.push({ hash: tx.hash, block });
  }
  if (evmMine && AUTOMINE[server.id]) await automine(rpc, server, true);
  ctx.nonce += opts.history;
  ctx.tokenBalance0 -= BigInt(opts.history);
  const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  if (nonce !== ctx.nonce) throw new Error(`account #0 nonce is ${nonce}, expected ${ctx.nonce}`);
  const after = await tokenBalance(rpc, ctx, HISTORY_TO);
  if (after - before !== BigInt(opts.history))
    throw new Error(
      `the history recipient's token balance moved by ${after - before}, expected ${opts.history}`,
    );
  const from = txs[0].block;
  const to = Math.min(from + OLD_LOG_BLOCKS - 1, txs[txs.length - 1].block);
  return { txs, logRange: [from, to], seconds: (Date.now() - t0) / 1000, evmMine };
}

/**
 * Gets every transaction of `txs` mined on a node that stopped mining: re-sends those it no
 * longer holds (Anvil drops from its pool what does not fit in the block evm_mine builds) and
 * mines with evm_mine (Anvil, Hardhat, Ganache), so that the reads see a settled chain.
 */
async function flush(rpc, ctx, txs) {
  const last = txs[txs.length - 1];
  for (let round = 0; round < 20; round++) {
    const mined =
      Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"])) - ctx.nonce;
    if (mined >= txs.length) return rpc.call("eth_getTransactionReceipt", [last.hash]);
    for (const tx of txs.slice(Math.max(0, mined))) {
      try {
        await rpc.call("eth_sendRawTransaction", [tx.raw]);
      } catch {} // already known
    }
    try {
      await rpc.call("evm_mine");
    } catch {
      return null;
    }
    const receipt = await waitMined(rpc, last.hash, 1000);
    if (receipt) return receipt;
  }
  return null;
}

/**
 * Signs `count` transactions, sends them one by one (each eth_sendRawTransaction awaited, and
 * by default its receipt too), then waits for the last one to be mined.
 */
async function runWrite(rpc, handle, ctx, w) {
  const nonce0 = ctx.nonce;
  const before = await w.probe(rpc, ctx);
  const head0 = Number(await rpc.call("eth_blockNumber"));
  const txs = [];
  const latencies = new Latencies();
  const window = cpuWindow(handle.pid);
  const t0 = process.hrtime.bigint();
  let sentCount = 0;
  let receipt;
  try {
    for (let i = 0; i < opts.count; i++) {
      const s = process.hrtime.bigint();
      // The client signs each transaction when it sends it, as a wallet does.
      const tx = w.build(ctx, ctx.nonce + i);
      txs.push(tx);
      const hash = await rpc.call("eth_sendRawTransaction", [tx.raw]);
      if (String(hash).toLowerCase() !== tx.hash)
        throw new Error(`answered ${JSON.stringify(hash)}, expected ${tx.hash}`);
      if (opts.waitReceipts) {
        receipt = await waitMined(rpc, tx.hash);
        if (!receipt) break;
      }
      latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
      sentCount++;
    }
  } catch (err) {
    ctx.nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
    throw new Error(`transaction ${sentCount + 1} of ${opts.count}: ${err.message}`);
  }
  const tSent = process.hrtime.bigint();
  const last = txs[txs.length - 1];
  if (sentCount === opts.count && !opts.waitReceipts) receipt = await waitMined(rpc, last.hash);
  const t1 = process.hrtime.bigint();
  const cpu = window.end(opts.count);
  let stalled;
  if (!receipt || sentCount < opts.count) {
    // The node stopped mining with transactions pending: note how far it got, then flush.
    const mined =
      Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"])) - ctx.nonce;
    stalled = { sent: sentCount + (opts.waitReceipts ? 1 : 0), mined };
    receipt = await flush(rpc, ctx, txs);
    if (!receipt)
      throw new Error(
        `mining stopped after ${mined} of ${opts.count} transactions, and evm_mine did not get the rest mined`,
      );
  }
  ctx.nonce += opts.count;
  if (receipt.status !== "0x1")
    throw new Error(`the last transaction failed: ${JSON.stringify(receipt)}`);
  const nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  if (nonce !== ctx.nonce) throw new Error(`account #0 nonce is ${nonce}, expected ${ctx.nonce}`);
  const after = await w.probe(rpc, ctx);
  if (after - before !== w.expectDelta(opts.count))
    throw new Error(`${w.what} moved by ${after - before}, expected ${w.expectDelta(opts.count)}`);
  const head1 = Number(await rpc.call("eth_blockNumber"));
  const seconds = Number(t1 - t0) / 1e9;
  if (w.id === "eth") ctx.txBlock = { number: receipt.blockNumber, hash: last.hash };
  if (w.id === "erc20") {
    ctx.tokenBalance0 -= BigInt(opts.count);
    for (let i = 0; i < opts.count; i++) {
      const h = (nonce0 + i) % HOLDER_COUNT;
      ctx.holderBalances.set(h, (ctx.holderBalances.get(h) ?? 0n) + 1n);
    }
  }
  return {
    count: opts.count,
    seconds,
    txPerSec: stalled ? null : opts.count / seconds,
    stalled: stalled ?? null,
    sendSeconds: Number(tSent - t0) / 1e9,
    latencyMs: latencies.summary(),
    blocks: head1 - head0,
    lastBlock: Number(receipt.blockNumber),
    gasUsedLast: receipt.gasUsed,
    ...cpu,
  };
}

/** rpc.raw, tried again (up to 3 times in all) after a socket error such as ECONNRESET. */
async function rawRetry(rpc, body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await rpc.raw(body);
    } catch (err) {
      if (attempt >= 3) throw err;
      await sleep(100);
    }
  }
}

/**
 * Checks the answer to one read (or to each of a read's `requests`, ids 1..n), then loads it with
 * autocannon: the checked body must come back each time (or, with `requests`, one of the checked
 * bodies: each carries its own id).
 */
async function runRead(rpc, handle, port, ctx, r) {
  if (HISTORY_READS.includes(r.id) && !ctx.history)
    throw new Error(`no history to read: ${ctx.historyError ?? "not built"}`);
  const list = r.requests ? r.requests(ctx) : [r.request(ctx)];
  const bodies = [];
  const expected = new Set();
  let bytes = 0;
  let facts;
  let first;
  for (const [i, q] of list.entries()) {
    const id = i + 1;
    const body = JSON.stringify({ jsonrpc: "2.0", id, method: q.method, params: q.params });
    const res = await rawRetry(rpc, body);
    let json;
    try {
      json = JSON.parse(res.text);
    } catch {
      throw new Error(`HTTP ${res.status}, not JSON: ${res.text.slice(0, 200)}`);
    }
    if (json?.error?.code === -32601) return { notServed: true, error: json.error, body };
    if (json?.error) return { error: json.error, body };
    if (res.status < 200 || res.status >= 300)
      throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    if (json?.jsonrpc !== "2.0" || json.id !== id || !("result" in json))
      throw new Error(`not a JSON-RPC 2.0 answer: ${res.text.slice(0, 200)}`);
    facts = r.check(json.result, ctx, q.expect);
    bodies.push(body);
    expected.add(res.text);
    bytes += Buffer.byteLength(res.text);
    first ??= res.text;
  }
  const workload = r.requests ? { bodies, expected, calls: 1 } : { body: bodies[0], calls: 1 };
  const load = r.connections ? { ...opts, connections: r.connections() } : opts;
  const m = r.closedLoop
    ? await measureClosedLoop(handle, port, bodies[0], first, load, RPCClient)
    : await measure(handle, port, workload, r.requests ? undefined : first, load);
  return {
    ...m,
    body: bodies[0],
    requestCount: bodies.length,
    bodyBytes: Math.round(bytes / bodies.length),
    facts,
    answer: first.length > 4000 ? `${first.slice(0, 4000)}...` : first,
  };
}

// ---------------------------------------------------------------------------------------------
// The pool workload: automine off, concurrent admissions, then evm_mine until the pool is empty

/** Transactions per pool sender: under Nodex's 64 pending per sender (`accountSlots`) and its nonce window (`accountQueue`, 64). */
const POOL_PER_SENDER = 50;
const POOL_TO = "0x00000000000000000000000000000000000be0c3";
const POOL_VALUE = 1n;

/** How each node turns automine off and on again (checked: the head must not move while sending). */
const AUTOMINE = {
  nodex: { off: ["evm_stopMining", []], on: ["evm_startMining", []] },
  hardhat: { off: ["evm_setAutomine", [false]], on: ["evm_setAutomine", [true]] },
  anvil: { off: ["evm_setAutomine", [false]], on: ["evm_setAutomine", [true]] },
  ganache: { off: ["miner_stop", []], on: ["miner_start", []] },
};

/**
 * Senders: enough for at most POOL_PER_SENDER each, and at least one per connection (a sender's
 * transfers go one after another, so fewer senders than connections would leave some idle).
 */
const poolSenderCount = () =>
  Math.max(
    Math.ceil(opts.poolCount / POOL_PER_SENDER),
    Math.min(opts.poolConnections, opts.poolCount),
  );

/** eth_chainId calls on each pool connection before the sends are timed. */
const POOL_CLIENT_WARMUP = 200;

/** Fresh senders (no balance anywhere until the set-up funds them): keys keccak256("nodex-bench-pool-<i>"). */
function poolSenders() {
  const out = [];
  for (let i = 0; i < poolSenderCount(); i++) {
    const key = new ethers.SigningKey(ethers.id(`nodex-bench-pool-${i}`));
    out.push({ key, address: ethers.computeAddress(key.publicKey) });
  }
  return out;
}

function signWith(key, fields) {
  const tx = ethers.Transaction.from({ type: 0, value: 0n, data: "0x", ...fields });
  tx.signature = key.sign(tx.unsignedHash);
  return { raw: tx.serialized, hash: tx.hash };
}

/**
 * What the pool holds, the way this node tells it: txpool_status (Nodex, Anvil), else the
 * entries of txpool_content (Ganache), else eth_pendingTransactions (Hardhat).
 * {pending, queued, method}.
 */
async function poolHolds(rpc, ctx) {
  const tries = ctx.poolMethod
    ? [ctx.poolMethod]
    : ["txpool_status", "txpool_content", "eth_pendingTransactions"];
  for (const method of tries) {
    let r;
    try {
      r = await rpc.call(method);
    } catch (err) {
      if (err instanceof RPCError) continue;
      throw err;
    }
    ctx.poolMethod = method;
    if (method === "txpool_status")
      return { pending: Number(r.pending), queued: Number(r.queued), method };
    if (method === "txpool_content") {
      // {pending: {sender: {nonce: tx or [tx]}}, queued: …}
      const count = (part) =>
        Object.values(part ?? {}).reduce(
          (n, byNonce) =>
            n + Object.values(byNonce).reduce((m, t) => m + (Array.isArray(t) ? t.length : 1), 0),
          0,
        );
      return { pending: count(r.pending), queued: count(r.queued), method };
    }
    if (!Array.isArray(r))
      throw new Error(`${method} is not an array: ${JSON.stringify(r).slice(0, 200)}`);
    return { pending: r.length, queued: null, method };
  }
  throw new Error(
    "the node answers none of txpool_status, txpool_content, eth_pendingTransactions",
  );
}

async function automine(rpc, server, on) {
  const control = AUTOMINE[server.id];
  if (!control)
    throw new Error(`no known way to turn ${server.label}'s automine ${on ? "on" : "off"}`);
  const [method, params] = on ? control.on : control.off;
  await rpc.call(method, params);
  return `${method}(${params.map(String).join(", ")})`;
}

/** Mines with evm_mine until `count` transactions of `hashes` are in blocks: [{ms, transactions, gasUsed, gasLimit, number}]. */
async function mineUntil(rpc, count, maxBlocks) {
  const blocks = [];
  let mined = 0;
  let empty = 0;
  while (mined < count && blocks.length < maxBlocks && empty < 3) {
    const s = process.hrtime.bigint();
    await rpc.call("evm_mine");
    const ms = Number(process.hrtime.bigint() - s) / 1e6;
    const b = await rpc.call("eth_getBlockByNumber", ["latest", false]);
    const transactions = b.transactions.length;
    blocks.push({
      number: Number(b.number),
      ms,
      transactions,
      gasUsed: Number(b.gasUsed),
      gasLimit: Number(b.gasLimit),
    });
    mined += transactions;
    empty = transactions === 0 ? empty + 1 : 0;
  }
  return blocks;
}

/**
 * Pool admission and block building. Set-up (not measured): automine off, fund the senders
 * from account #0 and mine that, sign every transfer. Measured: the sends (admitted tx/s, each
 * send's time), then the first evm_mine, then evm_mine until every transfer is mined.
 */
async function runPool(rpc, handle, port, ctx, server) {
  const off = await automine(rpc, server, false);
  const senders = poolSenders();
  const fundPrice = BigInt(await rpc.call("eth_gasPrice"));
  const gasPrice = fundPrice * 2n; // room for a base fee that rises after full blocks (Hardhat, Anvil)
  const perSenderCost = BigInt(POOL_PER_SENDER) * (GAS_TRANSFER * gasPrice + POOL_VALUE);
  const funding = perSenderCost * 2n > 10n ** 18n ? perSenderCost * 2n : 10n ** 18n;
  let nonce0 = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  // In chunks of POOL_PER_SENDER, each mined before the next: account #0 is a sender too.
  let fundBlocks = 0;
  for (let c = 0; c < senders.length; c += POOL_PER_SENDER) {
    const chunk = senders.slice(c, c + POOL_PER_SENDER);
    const head = Number(await rpc.call("eth_blockNumber"));
    for (const s of chunk) {
      const f = sign({
        chainId: ctx.chainId,
        nonce: nonce0++,
        gasPrice: fundPrice,
        gasLimit: GAS_TRANSFER,
        to: s.address,
        value: funding,
      });
      await rpc.call("eth_sendRawTransaction", [f.raw]);
    }
    if (Number(await rpc.call("eth_blockNumber")) !== head)
      throw new Error(
        `not comparable: ${off} answered, yet the head moved while the senders were funded (automine still on)`,
      );
    fundBlocks += (await mineUntil(rpc, chunk.length, 10)).length;
  }
  ctx.nonce = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
  if (ctx.nonce !== nonce0)
    throw new Error(
      `the funding transactions were not all mined: account #0 nonce ${ctx.nonce}, expected ${nonce0}`,
    );

  // Sign: sender i takes transfers i, i + S, i + 2S, … (round robin), each sender from its nonce.
  const txs = [];
  const nonces = [];
  for (const s of senders)
    nonces.push(Number(await rpc.call("eth_getTransactionCount", [s.address, "latest"])));
  const perSender = senders.map(() => 0);
  for (let i = 0; i < opts.poolCount; i++) {
    const k = i % senders.length;
    const tx = signWith(senders[k].key, {
      chainId: ctx.chainId,
      nonce: nonces[k] + perSender[k]++,
      gasPrice,
      gasLimit: GAS_TRANSFER,
      to: POOL_TO,
      value: POOL_VALUE,
    });
    txs.push({ ...tx, sender: k });
  }
  const before = BigInt(await rpc.call("eth_getBalance", [POOL_TO, "latest"]));
  const head1 = Number(await rpc.call("eth_blockNumber"));

  // Send: `--pool-connections` workers take the transfers in that order; a transfer waits for
  // its sender's previous one to be answered, so each sender's arrive in nonce order.
  // undici's client: node:http's took a whole core here, and set the pace for the faster nodes.
  const clients = await Promise.all(
    Array.from({ length: Math.min(opts.poolConnections, txs.length) }, () =>
      LeanRPCClient.open(port),
    ),
  );
  const answered = txs.map(() => {
    let resolve;
    const p = new Promise((r) => {
      resolve = r;
    });
    return { p, resolve };
  });
  const previous = new Map(); // sender -> index of its previous transfer
  const prev = txs.map((tx, i) => {
    const j = previous.get(tx.sender);
    previous.set(tx.sender, i);
    return j;
  });
  // Unmeasured: the same calls to every node over these connections, so that the client's code
  // is compiled before the window (else the first node measured pays for it, in its tx/s).
  await Promise.all(
    clients.map(async (client) => {
      for (let i = 0; i < POOL_CLIENT_WARMUP; i++) await client.call("eth_chainId");
    }),
  );
  const latencies = new Latencies();
  const rejected = [];
  let next = 0;
  const window = cpuWindow(handle.pid);
  const t0 = process.hrtime.bigint();
  try {
    await Promise.all(
      clients.map(async (client) => {
        while (next < txs.length) {
          const i = next++;
          const tx = txs[i];
          if (prev[i] !== undefined) await answered[prev[i]].p;
          const s = process.hrtime.bigint();
          try {
            const hash = await client.call("eth_sendRawTransaction", [tx.raw]);
            latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
            if (String(hash).toLowerCase() !== tx.hash)
              rejected.push(`transfer ${i}: answered ${JSON.stringify(hash)}, expected ${tx.hash}`);
          } catch (err) {
            rejected.push(`transfer ${i} (sender ${tx.sender}): ${err.message}`);
          } finally {
            answered[i].resolve();
          }
        }
      }),
    );
  } finally {
    for (const c of clients) c.close();
  }
  const t1 = process.hrtime.bigint();
  const cpu = window.end(txs.length);
  if (rejected.length > 0)
    throw new Error(`${rejected.length} of ${txs.length} transfers refused; first: ${rejected[0]}`);
  const head2 = Number(await rpc.call("eth_blockNumber"));
  if (head2 !== head1)
    throw new Error(
      `not comparable: the head moved from ${head1} to ${head2} while sending (automine still on after ${off})`,
    );
  const held = await poolHolds(rpc, ctx);
  if (held.pending !== txs.length || (held.queued ?? 0) !== 0)
    throw new Error(
      `the pool holds ${held.pending} pending and ${held.queued} queued (${held.method}), expected ${txs.length} pending`,
    );

  // Build blocks: one evm_mine, then more until every transfer is mined.
  const blocks = await mineUntil(rpc, txs.length, txs.length + 5);
  const minedTx = blocks.reduce((n, b) => n + b.transactions, 0);
  if (minedTx !== txs.length)
    throw new Error(`${blocks.length} evm_mine calls mined ${minedTx} of ${txs.length} transfers`);
  const heldAfter = await poolHolds(rpc, ctx);
  if (heldAfter.pending !== 0 || (heldAfter.queued ?? 0) !== 0)
    throw new Error(
      `the pool still holds ${heldAfter.pending} pending, ${heldAfter.queued} queued after the transfers were mined`,
    );
  const after = BigInt(await rpc.call("eth_getBalance", [POOL_TO, "latest"]));
  if (after - before !== BigInt(txs.length) * POOL_VALUE)
    throw new Error(`the recipient's balance moved by ${after - before}, expected ${txs.length}`);
  for (const [k, s] of senders.entries()) {
    const n = Number(await rpc.call("eth_getTransactionCount", [s.address, "latest"]));
    if (n !== nonces[k] + perSender[k])
      throw new Error(`sender ${k} nonce ${n}, expected ${nonces[k] + perSender[k]}`);
  }
  const on = await automine(rpc, server, true);
  const seconds = Number(t1 - t0) / 1e9;
  return {
    count: txs.length,
    senders: senders.length,
    perSender: Math.max(...perSender),
    connections: clients.length,
    gasPrice: hex(gasPrice),
    automineOff: off,
    automineOn: on,
    fundBlocks,
    seconds,
    txPerSec: txs.length / seconds,
    latencyMs: latencies.summary(),
    held,
    ...cpu,
    mine: {
      first: blocks[0],
      blocks,
      count: blocks.length,
      totalMs: blocks.reduce((t, b) => t + b.ms, 0),
    },
  };
}

async function benchNode(server, run) {
  const port = await freePort();
  const logFile = join(tmp, `${server.id}.log`);
  const handle = await launchServer(server, run, { port, tmp, logFile });
  const rpc = new RPCClient(port);
  try {
    if (!handle || run.skipped) return;
    let ctx;
    try {
      ctx = await prepareChain(rpc, run);
    } catch (err) {
      run.skipped = `set-up failed: ${err.message}`;
      log(`  ${run.skipped}`);
      return;
    }
    for (const w of WRITES) {
      if (!workloadIds.includes(w.id)) continue;
      try {
        const m = await runWrite(rpc, handle, ctx, w);
        run.results[w.id] = m;
        if (m.stalled) log(`  ${w.id.padEnd(7)} stalled: ${stallText(m)}`);
        log(
          `  ${w.id.padEnd(7)} ${(m.stalled ? "stalled" : fmtRate(m.txPerSec)).padStart(8)} tx/s   ${fmtInt(m.count)} tx in ${m.seconds.toFixed(1)} s, send p50 ${fmtMs(m.latencyMs.p50)} ms p99 ${fmtMs(m.latencyMs.p99)} ms, ${fmtInt(m.blocks)} blocks` +
            `  server CPU ${pct(m.serverCPU?.share)}  client CPU ${pct(m.clientCPU.share)}  other CPU ${pct(m.otherCPU?.share)}`,
        );
      } catch (err) {
        run.results[w.id] = { error: err.message };
        log(`  ${w.id.padEnd(7)} failed: ${err.message}`);
      }
      if (handle.done) break;
    }
    if (needsHistory() && !handle.done) {
      try {
        const h = await buildHistory(rpc, ctx, server);
        ctx.history = h;
        run.results.history = {
          count: h.txs.length,
          firstBlock: h.txs[0].block,
          lastBlock: h.txs[h.txs.length - 1].block,
          logRange: h.logRange,
          seconds: h.seconds,
          evmMine: h.evmMine,
        };
        log(
          `  history ${fmtInt(h.txs.length)} ERC-20 transfers in blocks ${h.txs[0].block}..${h.txs[h.txs.length - 1].block}, one per block, in ${h.seconds.toFixed(1)} s (set-up, not measured)${h.evmMine ? "; automine had stopped: each mined with evm_mine" : ""}`,
        );
      } catch (err) {
        ctx.historyError = err.message;
        run.results.history = { error: err.message };
        log(`  history failed: ${err.message}`);
      }
    }
    ctx.head = Number(await rpc.call("eth_blockNumber"));
    for (const r of READS) {
      if (!workloadIds.includes(r.id) || handle.done) continue;
      try {
        const m = await runRead(rpc, handle, port, ctx, r);
        run.results[r.id] = m;
        if (m.notServed) log(`  ${r.id.padEnd(7)} not served (${m.error.code} ${m.error.message})`);
        else if (m.error)
          log(`  ${r.id.padEnd(7)} error answer: ${JSON.stringify(m.error).slice(0, 200)}`);
        else
          log(
            `  ${r.id.padEnd(7)} ${fmtRate(m.reqPerSec).padStart(8)} req/s  p50 ${fmtMs(m.latencyMs.p50)} ms  p99 ${fmtMs(m.latencyMs.p99)} ms  errors ${errorCount(m)}` +
              `  ${fmtInt(m.bodyBytes)} B${m.facts.logs ? `, ${m.facts.logs} logs` : ""}${m.facts.transactions ? `, ${m.facts.transactions} tx` : ""}` +
              `  server CPU ${pct(m.serverCPU?.share)}  client CPU ${pct(m.clientCPU.share)}  other CPU ${pct(m.otherCPU?.share)}`,
          );
      } catch (err) {
        run.results[r.id] = { error: { message: err.message } };
        log(`  ${r.id.padEnd(7)} failed: ${err.message}`);
      }
    }
    if (workloadIds.includes("pool") && !handle.done) {
      try {
        const m = await runPool(rpc, handle, port, ctx, server);
        run.results.pool = m;
        log(
          `  pool    ${fmtRate(m.txPerSec).padStart(8)} tx/s   ${fmtInt(m.count)} tx admitted in ${m.seconds.toFixed(2)} s over ${m.connections} connections (${m.senders} senders), send p50 ${fmtMs(m.latencyMs.p50)} ms p99 ${fmtMs(m.latencyMs.p99)} ms, pool held ${m.held.pending} (${m.held.method})` +
            `  server CPU ${pct(m.serverCPU?.share)}  client CPU ${pct(m.clientCPU.share)}  other CPU ${pct(m.otherCPU?.share)}`,
        );
        log(
          `  mine    first evm_mine ${fmtMs(m.mine.first.ms)} ms for ${fmtInt(m.mine.first.transactions)} tx (gas limit ${fmtInt(m.mine.first.gasLimit)}); pool empty after ${m.mine.count} blocks, ${fmtMs(m.mine.totalMs)} ms of evm_mine (${m.mine.blocks.map((b) => b.transactions).join(" + ")} tx)`,
        );
      } catch (err) {
        run.results.pool = { error: err.message };
        log(`  pool    failed: ${err.message}`);
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
    // A profiled Nodex writes its profile on exit: give it time.
    await stopChild(handle, server.kind === "nodex" && opts.nodexCPUProfile ? 60_000 : 5_000);
  }
}

// ---------------------------------------------------------------------------------------------
// Nodex CPU profile (--nodex-cpu-prof)

function reportProfile(dir, resultsDir) {
  return keepProfile(dir, join(resultsDir, `chain-${resultsStamp}-nodex.cpuprofile`), "Nodex", 20);
}

// ---------------------------------------------------------------------------------------------
// Output

const OTHER_CPU_NOTE = 0.15;

function pct(share) {
  return share === undefined || share === null ? "?" : `${Math.round(share * 100)}%`;
}
function fmtRate(n) {
  if (n === undefined || n === null) return "—";
  return n < 100 ? n.toFixed(1) : fmtInt(n);
}
/** Nodex ÷ peer: above 1× Nodex is faster (for rates). */
function ratio(nodex, peer) {
  if (!nodex || !peer) return "—";
  const r = nodex / peer;
  return `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}
function stallText(m) {
  return `mining stopped with ${fmtInt(m.stalled.mined)} of ${fmtInt(m.stalled.sent)} sent transactions mined (the rest stayed pending); flushed with evm_mine after the measurement, so no tx/s`;
}
function errorCount(m) {
  return m.non2xx + m.errors + m.timeouts + m.mismatches;
}

function notesFor(name, m, notes, unit = "req/s") {
  if (m.otherCPU && m.otherCPU.share > OTHER_CPU_NOTE)
    notes.push(
      `  ${name}: other processes used ${pct(m.otherCPU.share)} of a core during the measurement: figures are noisy`,
    );
  if (m.clientCPU.share > 0.9)
    notes.push(
      `  ${name}: the bench process used ${pct(m.clientCPU.share)} of a core: ${unit} is capped by the client, compare srv µs/${unit === "tx/s" ? "tx" : "req"}`,
    );
}

function printWrite(w, runs) {
  const nodex = runs.find((r) => r.server.kind === "nodex")?.results[w.id];
  const headers = [
    "node",
    "version",
    "tx/s",
    "send p50 ms",
    "send p99 ms",
    "blocks",
    "srv CPU",
    "srv µs/tx",
    "main µs/tx",
    "Nodex ÷ this",
  ];
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results[w.id];
    const name = run.server.label;
    if (!m || m.error) {
      notes.push(`  ${name}: not measured: ${firstLines(m?.error ?? run.skipped ?? "not run", 1)}`);
      continue;
    }
    rows.push([
      name,
      run.version ?? "",
      m.stalled ? "stalled" : fmtRate(m.txPerSec),
      fmtMs(m.latencyMs.p50),
      fmtMs(m.latencyMs.p99),
      fmtInt(m.blocks),
      pct(m.serverCPU?.share),
      m.serverCPU?.usPerRequest ? fmtInt(m.serverCPU.usPerRequest) : "—",
      m.serverCPU?.mainUsPerRequest != null ? fmtInt(m.serverCPU.mainUsPerRequest) : "—",
      ratio(nodex?.txPerSec, m.txPerSec),
    ]);
    if (m.stalled)
      notes.push(
        `  ${name}: ${stallText(m)}${run.server.id === "anvil" ? "; Anvil's automine misses transactions that arrive while it mines a block (foundry-rs/foundry#10122); waiting for each receipt (the default) avoids it" : ""}`,
      );
    if (m.blocks !== m.count)
      notes.push(`  ${name}: ${fmtInt(m.count)} transactions went into ${fmtInt(m.blocks)} blocks`);
    notesFor(name, m, notes, "tx/s");
  }
  printTable(w.title, headers, rows, notes);
}

function printRead(r, runs) {
  const nodex = runs.find((x) => x.server.kind === "nodex")?.results[r.id];
  const headers = [
    "node",
    "version",
    "req/s",
    "p50 ms",
    "p99 ms",
    "errors",
    "bytes",
    "srv CPU",
    "srv µs/req",
    "Nodex ÷ this",
  ];
  const rows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results[r.id];
    const name = run.server.label;
    if (m?.notServed) {
      rows.push([name, run.version ?? "", "not served", "", "", "", "", "", "", ""]);
      notes.push(`  ${name}: answers ${m.error.code} ${m.error.message}`);
      continue;
    }
    if (!m || m.error || m.reqPerSec === undefined) {
      notes.push(
        `  ${name}: not measured: ${firstLines(m?.error ? JSON.stringify(m.error) : (run.skipped ?? "not run"), 1)}`,
      );
      continue;
    }
    const errs = errorCount(m);
    rows.push([
      name,
      run.version ?? "",
      fmtRate(m.reqPerSec),
      fmtMs(m.latencyMs.p50),
      fmtMs(m.latencyMs.p99),
      errs === 0 ? "0" : `${errs} !`,
      fmtInt(m.bodyBytes),
      pct(m.serverCPU?.share),
      m.serverCPU?.usPerRequest
        ? m.serverCPU.usPerRequest >= 1000
          ? fmtInt(m.serverCPU.usPerRequest)
          : m.serverCPU.usPerRequest.toFixed(1)
        : "—",
      nodex?.notServed ? "—" : ratio(nodex?.reqPerSec, m.reqPerSec),
    ]);
    if (errs > 0)
      notes.push(
        `  ${name}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts, ${m.mismatches} wrong bodies out of ${m.requests} requests`,
      );
    if (m.facts?.logs !== undefined && m.facts.logs !== nodex?.facts?.logs)
      notes.push(
        `  ${name}: ${m.facts.logs} logs per answer${nodex?.facts?.logs ? ` against Nodex's ${nodex.facts.logs}: the ratio compares different answers` : ""}${run.results.erc20?.stalled ? " (its ERC-20 transfers stalled and were flushed into full blocks)" : ""}`,
      );
    notesFor(name, m, notes);
  }
  const varied = runs.map((run) => run.results[r.id]?.requestCount).find((n) => n > 1);
  if (varied)
    notes.unshift(
      `  ${fmtInt(varied)} different requests, each checked once before the load, taken in turn; bytes is their mean answer`,
    );
  if (r.closedLoop)
    notes.unshift(
      "  closed loop: each connection sends the next request when the answer is in; req/s = answers ÷ time to the last one",
    );
  printTable(
    `${r.title} (${r.connections?.() ?? opts.connections} connections, ${opts.duration} s after ${opts.warmup} s warm-up)`,
    headers,
    rows,
    notes,
  );
}

/** The pool workload's tables: admission, then block building. */
function printPool(runs) {
  const nodex = runs.find((r) => r.server.kind === "nodex")?.results.pool;
  const admitRows = [];
  const mineRows = [];
  const notes = [];
  for (const run of runs) {
    const m = run.results.pool;
    const name = run.server.label;
    if (!m || m.error) {
      notes.push(`  ${name}: not measured: ${firstLines(m?.error ?? run.skipped ?? "not run", 1)}`);
      continue;
    }
    admitRows.push([
      name,
      run.version ?? "",
      fmtRate(m.txPerSec),
      fmtMs(m.latencyMs.p50),
      fmtMs(m.latencyMs.p99),
      `${fmtInt(m.held.pending)} (${m.held.method})`,
      pct(m.serverCPU?.share),
      m.serverCPU?.usPerRequest ? fmtInt(m.serverCPU.usPerRequest) : "—",
      m.serverCPU?.mainUsPerRequest != null ? fmtInt(m.serverCPU.mainUsPerRequest) : "—",
      ratio(nodex?.txPerSec, m.txPerSec),
    ]);
    const f = m.mine.first;
    mineRows.push([
      name,
      m.automineOff,
      fmtInt(f.gasLimit),
      fmtMs(f.ms),
      fmtInt(f.transactions),
      fmtInt((f.ms * 1000) / f.transactions),
      String(m.mine.count),
      fmtMs(m.mine.totalMs),
      ratio(nodex?.mine.totalMs, m.mine.totalMs),
    ]);
    notesFor(name, m, notes, "tx/s");
  }
  printTable(
    `pool admission: ${fmtInt(opts.poolCount)} signed transfers, ${poolSenderCount()} senders (≤ ${Math.ceil(opts.poolCount / poolSenderCount())} each), over ${opts.poolConnections} connections, automine off`,
    [
      "node",
      "version",
      "tx/s",
      "send p50 ms",
      "send p99 ms",
      "in pool",
      "srv CPU",
      "srv µs/tx",
      "main µs/tx",
      "Nodex ÷ this",
    ],
    admitRows,
    notes,
  );
  printTable(
    "block building: evm_mine until the pool is empty (Nodex ÷ this: total ms, below 1× Nodex is faster)",
    [
      "node",
      "automine off",
      "gas limit",
      "1st evm_mine ms",
      "1st block tx",
      "µs/tx",
      "blocks",
      "total ms",
      "Nodex ÷ this",
    ],
    mineRows,
    [],
  );
}

function printTable(title, headers, rows, notes) {
  log("");
  log(`== ${title} ==`);
  log("");
  if (rows.length > 0) {
    log(
      table(
        headers,
        rows,
        headers.map((_, i) => (i < 2 ? "l" : "r")),
      ),
    );
  } else {
    log("(no node measured)");
  }
  if (notes.length > 0) {
    log("");
    log("notes:");
    for (const n of notes) log(n);
  }
}

/** One row per figure, one column per node, then Nodex ÷ each peer. */
function printSummary(runs) {
  const nodexRun = runs.find((r) => r.server.kind === "nodex");
  const peers = runs.filter((r) => r.server.kind !== "nodex");
  const figures = [];
  for (const w of WRITES)
    if (workloadIds.includes(w.id))
      figures.push({
        label: `${w.short}, tx/s`,
        get: (run) => run.results[w.id]?.txPerSec,
        stalled: (run) => Boolean(run.results[w.id]?.stalled),
      });
  for (const r of READS) {
    if (!workloadIds.includes(r.id)) continue;
    figures.push({
      label: `${r.short}, req/s`,
      get: (run) => run.results[r.id]?.reqPerSec,
      id: r.id,
    });
    figures.push({
      label: `${r.short}, p99 ms`,
      get: (run) => run.results[r.id]?.latencyMs?.p99,
      id: r.id,
      latency: true,
    });
  }
  if (workloadIds.includes("pool")) {
    const pool = (run) => (run.results.pool?.error ? undefined : run.results.pool);
    figures.push(
      { label: "pool admission, tx/s", get: (run) => pool(run)?.txPerSec },
      { label: "pool send p50, ms", get: (run) => pool(run)?.latencyMs.p50, latency: true },
      { label: "pool send p99, ms", get: (run) => pool(run)?.latencyMs.p99, latency: true },
      { label: "1st evm_mine, ms", get: (run) => pool(run)?.mine.first.ms, latency: true },
      {
        label: "1st block, transactions",
        get: (run) => pool(run)?.mine.first.transactions,
        count: true,
      },
      {
        label: "1st evm_mine, µs per tx",
        get: (run) => {
          const f = pool(run)?.mine.first;
          return f ? (f.ms * 1000) / f.transactions : undefined;
        },
        latency: true,
        integer: true,
      },
      { label: "evm_mine until empty, blocks", get: (run) => pool(run)?.mine.count, count: true },
      { label: "evm_mine until empty, ms", get: (run) => pool(run)?.mine.totalMs, latency: true },
    );
  }
  const headers = [
    "figure",
    ...runs.map((r) => r.server.label),
    ...peers.map((p) => `Nodex ÷ ${p.server.label}`),
  ];
  const rows = figures.map((f) => {
    const cell = (run) => {
      if (f.id && run.results[f.id]?.notServed) return "not served";
      if (f.stalled?.(run)) return "stalled";
      const v = f.get(run);
      if (v === undefined || v === null) return "—";
      return f.count || f.integer ? fmtInt(v) : f.latency ? fmtMs(v) : fmtRate(v);
    };
    const nv = nodexRun ? f.get(nodexRun) : undefined;
    return [f.label, ...runs.map(cell), ...peers.map((p) => (f.count ? "—" : ratio(nv, f.get(p))))];
  });
  log("");
  log("== Summary: Nodex ÷ peer above 1× means Nodex is faster (for p99 and ms: slower) ==");
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
// Main

async function main() {
  const started = new Date();
  resultsStamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(benchDir, "results");
  mkdirSync(resultsDir, { recursive: true });
  ensureBenchDeps(["autocannon", "ethers", "solc", "undici"]);
  await loadAutocannon();
  ethers = await loadEthers();
  if (selected.some((s) => s.kind === "nodex")) {
    if (opts.nodexBin) {
      if (!existsSync(opts.nodexBin)) usage(`--nodex-bin: ${opts.nodexBin} does not exist`);
      log(`Nodex: ${opts.nodexBin} (--nodex-bin; not rebuilt here)`);
    } else ensureNodexBuilt(args.build);
  }

  tmp = mkdtempSync(join(tmpdir(), "nodex-bench-chain-"));
  const profDir = join(tmp, "cpu-prof");
  if (opts.nodexCPUProfile) {
    const nodex = NODES.find((s) => s.kind === "nodex");
    const prepare = nodex.prepare.bind(nodex);
    nodex.prepare = (port, dir) => {
      const spec = prepare(port, dir);
      return { ...spec, args: ["--cpu-prof", "--cpu-prof-dir", profDir, ...spec.args] };
    };
  }
  const t0 = Date.now();
  token = compileToken();
  const cpu = cpus();
  log(
    `Chain bench: ${selected.length} nodes, ${fmtInt(opts.count)} transfers per write workload, ` +
      `reads with ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s each` +
      (workloadIds.includes("pool")
        ? `, pool: ${fmtInt(opts.poolCount)} transfers over ${opts.poolConnections} connections`
        : ""),
  );
  log(
    `node ${process.version}, ${cpu.length} cores (${cpu[0]?.model ?? "?"}), autocannon ${packageJSON("autocannon").json.version} in-process, ` +
      `ethers ${ethers.version}, token compiled with solc ${token.solc.split("+")[0]} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );

  const runs = selected.map((server) => ({
    server: { id: server.id, label: server.label, kind: server.kind },
    version: null,
    results: {},
  }));
  let profiled = false;
  for (const [i, server] of selected.entries()) {
    const run = runs[i];
    log("");
    log(`[${server.id}] ${server.label}`);
    await benchNode(server, run);
    if (server.kind === "nodex" && opts.nodexCPUProfile && run.command) profiled = true;
  }

  for (const w of WRITES) if (workloadIds.includes(w.id)) printWrite(w, runs);
  for (const r of READS) if (workloadIds.includes(r.id)) printRead(r, runs);
  if (workloadIds.includes("pool")) printPool(runs);
  printSummary(runs);
  if (profiled) {
    const nodexRun = runs.find((r) => r.server.kind === "nodex");
    nodexRun.cpuProfile = reportProfile(profDir, resultsDir) ?? null;
  }

  const file = join(resultsDir, `chain-${resultsStamp}.json`);
  const report = {
    bench: "chain",
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    options: { ...opts, workloads: workloadIds },
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cores: cpu.length,
      cpu: cpu[0]?.model ?? null,
    },
    commit: gitCommit() ?? null,
    token: { solc: token.solc, evmVersion: "paris", bytecode: token.bytecode },
    accounts: { from: ACCOUNT0, ethTo: ETH_TO, tokenTo: TOKEN_TO },
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
