#!/usr/bin/env node
// Sync from one peer against `nodex import` of the same chain, on the same machine, in one run.
//
// A devnet node A builds a chain (an ERC-20, then blocks full of token transfers and empty
// blocks), is stopped, its chain exported with `nodex export` and imported into a fresh datadir
// with `nodex import` (timed). A is started again and a fresh node B, pointed at A with
// --bootnodes, syncs it over the peer-to-peer network (timed from B's start until its head is
// A's). Then a fresh node C joins A by snapshot sync (--sync-mode snap: headers from genesis,
// the state at a pivot 64 blocks below A's head, the blocks after it), timed the same way. Prints
// blocks/s and Mgas/s of each, the ratio sync time ÷ import time, full sync ÷ snap sync with the
// bytes each downloaded (their /metrics), B's "Synced" and C's "Snapshot installed" figures;
// writes bench/results/sync-<timestamp>.json.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, freemem, tmpdir, totalmem } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { compileToken, GAS_DEPLOY, KEY0, loadEthers, TOKEN_SUPPLY } from "../lib/eth.mjs";
import { fmtInt, indent, log, readTail, sleep, table } from "../lib/format.mjs";
import { freePort, RPCClient, waitReady } from "../lib/http.mjs";
import {
  cpuSeconds,
  installCleanup,
  isLoopback,
  listeningAddresses,
  machineBusySeconds,
  startChild,
  stopChild,
} from "../lib/proc.mjs";
import { keepProfile } from "../lib/profile.mjs";
import { DEV_MNEMONIC } from "../lib/servers.mjs";
import { benchDir, ensureBenchDeps, ensureNodexBuilt, gitCommit, root } from "../lib/setup.mjs";

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: node bench/sync/run.mjs [--blocks N] [--full-fraction F] [--txs-per-block N] [--senders N] [--recipients N] [--segment N] [--connections N] [--sync-timeout S] [--cpu-prof] [--keep] [--build]

  --blocks N          blocks of the chain, set-up blocks included (default 10000)
  --full-fraction F   share of them full of ERC-20 transfers; the rest are empty (default 0.5)
  --txs-per-block N   transfers per full block (default 0: as many as the block gas limit takes)
  --senders N         development accounts sending the transfers, in turn (default 20, at most 20)
  --recipients N      addresses receiving them, in turn (default 256)
  --segment N         the chain alternates runs of full and empty blocks, N blocks per pair of
                      runs (default 100: 50 full, then 50 empty)
  --connections N     keep-alive connections sending a block's transfers (default 4)
  --sync-timeout S    give up on the sync after S seconds (default 3600)
  --cpu-prof          run the import and node B under node --cpu-prof; print their top functions
                      (the profiles go to bench/results/); the figures are then slower
  --keep              keep the temp folder (datadirs, chain file, logs)
  --build             run \`npm run build\` first even if apps/node/dist/main.js exists
`;

let args;
try {
  args = parseArgs({
    options: {
      blocks: { type: "string", default: "10000" },
      "full-fraction": { type: "string", default: "0.5" },
      "txs-per-block": { type: "string", default: "0" },
      senders: { type: "string", default: "20" },
      recipients: { type: "string", default: "256" },
      segment: { type: "string", default: "100" },
      connections: { type: "string", default: "4" },
      "sync-timeout": { type: "string", default: "3600" },
      "cpu-prof": { type: "boolean", default: false },
      keep: { type: "boolean", default: false },
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

function integer(flag, text, min, max = Number.MAX_SAFE_INTEGER) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    process.stderr.write(`${flag} must be an integer from ${min} to ${max}, not ${text}\n`);
    process.exit(2);
  }
  return n;
}

const SETUP_BLOCKS_MAX = 8;
const opts = {
  blocks: integer("--blocks", args.blocks, SETUP_BLOCKS_MAX + 2),
  fullFraction: Number(args["full-fraction"]),
  txsPerBlock: integer("--txs-per-block", args["txs-per-block"], 0),
  senders: integer("--senders", args.senders, 1, 20),
  recipients: integer("--recipients", args.recipients, 1, 5000),
  segment: integer("--segment", args.segment, 2),
  connections: integer("--connections", args.connections, 1, 64),
  syncTimeout: integer("--sync-timeout", args["sync-timeout"], 1),
  cpuProf: args["cpu-prof"],
  keep: args.keep,
};
if (!(opts.fullFraction >= 0 && opts.fullFraction <= 1)) {
  process.stderr.write(`--full-fraction must be from 0 to 1, not ${args["full-fraction"]}\n`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Nodes

const NODEX_BIN = join(root, "apps/node/bin/nodex.js");
const NETWORK = ["--devnet"];
/** The transfers' tokens: 1 unit each. The set-up gives each sender and recipient some first. */
const SENDER_TOKENS = 10n ** 21n;
const RECIPIENT_TOKENS = 1n;
/** Gas limit of the timed transfers: a little above what one uses (34,437 gas), so that blocks fill up. */
const TRANSFER_GAS_LIMIT = 40_000;

const tmp = mkdtempSync(join(tmpdir(), "nodex-bench-sync-"));
const cleanupSync = installCleanup(() => {
  if (!opts.keep) rmSync(tmp, { recursive: true, force: true });
});

/** `node [nodeArgs] apps/node/bin/nodex.js args`, output to logFile. */
function startNodex(argv, logFile, nodeArgs = []) {
  return startChild(
    { cmd: process.execPath, args: [...nodeArgs, NODEX_BIN, ...argv], cwd: root },
    logFile,
  );
}

/** JSON log lines of a node with this message. */
function logLines(file, msg) {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {}
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{") || !line.includes(`"msg":"${msg}"`)) continue;
    try {
      out.push(JSON.parse(line));
    } catch {}
  }
  return out;
}

async function waitLogLine(file, msg, handle, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const lines = logLines(file, msg);
    if (lines.length > 0) return lines[0];
    if (handle.done) break;
    await sleep(100);
  }
  throw new Error(
    `no "${msg}" log line${handle.done ? " (the node exited)" : ""}:\n${indent(readTail(file, 12), "    | ")}`,
  );
}

/**
 * Starts a devnet node with JSON-RPC on 127.0.0.1:<free port> and p2p on `p2pHost`:0; waits for
 * its RPC and its "P2P listening" line and checks that it listens on loopback only.
 */
async function startNode(name, { datadir, p2pHost, extra = [], nodeArgs = [], logFile }) {
  const port = await freePort();
  const argv = [
    ...NETWORK,
    "--datadir",
    datadir,
    "--rpc-host",
    "127.0.0.1",
    "--rpc-port",
    String(port),
    "--rpc-modules",
    "eth,net,web3,rpc,txpool,evm",
    "--p2p-host",
    p2pHost,
    "--p2p-port",
    "0",
    "--no-automine",
    "--log-format",
    "json",
    "--log-level",
    "info",
    ...extra,
  ];
  const t0 = process.hrtime.bigint();
  const handle = startNodex(argv, logFile, nodeArgs);
  const node = {
    name,
    handle,
    port,
    t0,
    logFile,
    command: ["node", ...nodeArgs, relative(root, NODEX_BIN), ...argv].join(" "),
  };
  await waitReady(port, handle, 60_000);
  const listening = await waitLogLine(logFile, "P2P listening", handle);
  node.p2p =
    listening.addresses?.find((a) => a.includes(`/ip4/${p2pHost}/`)) ?? listening.addresses?.[0];
  if (!node.p2p) throw new Error(`${name}: no address in ${JSON.stringify(listening)}`);
  const sockets = listeningAddresses(handle.pid) ?? [];
  node.listening = sockets.map((s) => `${s.address}:${s.port}`);
  const outside = sockets.filter((s) => !isLoopback(s.address));
  if (outside.length > 0)
    throw new Error(
      `${name} listens beyond loopback: ${outside.map((s) => `${s.address}:${s.port}`).join(", ")}`,
    );
  node.rpc = new RPCClient(port);
  log(`  ${name}: pid ${handle.pid}, RPC 127.0.0.1:${port}, p2p ${node.p2p}`);
  return node;
}

/** The node's `nodex_p2p_received_bytes` by protocol, from its /metrics listener. */
async function receivedBytes(metricsPort) {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  const text = await res.text();
  const out = {};
  for (const m of text.matchAll(/^nodex_p2p_received_bytes\{protocol="([a-z_]+)"\} (\d+)/gm))
    out[m[1]] = Number(m[2]);
  return out;
}

const sumOf = (bytes) => Object.values(bytes).reduce((a, b) => a + b, 0);
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

async function stopNode(node) {
  if (!node) return;
  node.rpc?.close();
  await stopChild(node.handle, 30_000);
}

/** Runs `nodex <argv>` to its end; {code, seconds, cpuSeconds (sampled), log}. */
async function runCommand(argv, logFile, nodeArgs = []) {
  const t0 = process.hrtime.bigint();
  const handle = startNodex(argv, logFile, nodeArgs);
  let cpu;
  const sampler = setInterval(() => {
    const c = cpuSeconds(handle.pid);
    if (c !== undefined) cpu = c;
  }, 100);
  const { code, signal, error } = await handle.exited;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  clearInterval(sampler);
  await stopChild(handle, 1000);
  if (error) throw error;
  return { code, signal, seconds, cpuSeconds: cpu, output: readFileSync(logFile, "utf8") };
}

// ---------------------------------------------------------------------------------------------
// Building the chain on A

let ethers;

/** The development accounts of devnet: the 10 of the dev mnemonic, then keccak256("cow"), ("cow1") … */
function devKeys() {
  const keys = [];
  for (let i = 0; i < 10; i++)
    keys.push(
      ethers.HDNodeWallet.fromPhrase(DEV_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).privateKey,
    );
  for (let i = 0; i < 10; i++)
    keys.push(ethers.keccak256(ethers.toUtf8Bytes(i === 0 ? "cow" : `cow${i}`)));
  if (keys[0] !== KEY0) throw new Error("the dev mnemonic's account #0 is not KEY0");
  return keys.map((k) => {
    const key = new ethers.SigningKey(k);
    return { key, address: ethers.computeAddress(key.publicKey) };
  });
}

function signWith(key, fields) {
  const tx = ethers.Transaction.from({ type: 0, value: 0n, data: "0x", ...fields });
  tx.signature = key.sign(tx.unsignedHash);
  return { raw: tx.serialized, hash: tx.hash };
}

/** Sends transactions grouped by sender (each sender's in nonce order, as one JSON-RPC batch) over `clients`. */
async function sendAll(clients, txs) {
  const bySender = new Map();
  for (const tx of txs) {
    if (!bySender.has(tx.sender)) bySender.set(tx.sender, []);
    bySender.get(tx.sender).push(tx);
  }
  const groups = [...bySender.values()];
  let next = 0;
  const refused = [];
  await Promise.all(
    clients.map(async (client) => {
      while (next < groups.length) {
        const group = groups[next++];
        const body = JSON.stringify(
          group.map((tx, i) => ({
            jsonrpc: "2.0",
            id: i,
            method: "eth_sendRawTransaction",
            params: [tx.raw],
          })),
        );
        const { status, text } = await client.raw(body, 120_000);
        let answers;
        try {
          answers = JSON.parse(text);
        } catch {
          throw new Error(
            `eth_sendRawTransaction batch: HTTP ${status}, not JSON: ${text.slice(0, 200)}`,
          );
        }
        if (!Array.isArray(answers))
          throw new Error(`eth_sendRawTransaction batch: not an array: ${text.slice(0, 200)}`);
        for (const a of answers) {
          const tx = group[a.id];
          if (a.error) refused.push(`${a.error.code} ${a.error.message}`);
          else if (String(a.result).toLowerCase() !== tx.hash)
            refused.push(`answered ${a.result}, expected ${tx.hash}`);
        }
      }
    }),
  );
  if (refused.length > 0)
    throw new Error(
      `${refused.length} of ${txs.length} transactions refused; first: ${refused[0]}`,
    );
}

async function mineOne(rpc) {
  await rpc.call("evm_mine", [], 600_000);
  return rpc.call("eth_getBlockByNumber", ["latest", false]);
}

/** Mines until the pool is empty (at most `max` blocks); returns the blocks. */
async function mineUntilEmpty(rpc, max = 10) {
  const blocks = [];
  for (let i = 0; i < max; i++) {
    blocks.push(await mineOne(rpc));
    const s = await rpc.call("txpool_status");
    if (Number(s.pending) === 0 && Number(s.queued) === 0) return blocks;
  }
  throw new Error(`the pool is not empty after ${max} evm_mine`);
}

async function mineEmpty(rpc, count) {
  const before = Number(await rpc.call("eth_blockNumber"));
  for (let done = 0; done < count; ) {
    const k = Math.min(1000, count - done);
    const batch = Array.from({ length: k }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "evm_mine",
      params: [],
    }));
    const res = await rpc.raw(JSON.stringify(batch), 600_000);
    const answers = JSON.parse(res.text);
    if (!Array.isArray(answers) || answers.some((a) => a.error))
      throw new Error(`a batch of ${k} evm_mine: ${res.text.slice(0, 200)}`);
    done += k;
  }
  const after = Number(await rpc.call("eth_blockNumber"));
  if (after !== before + count)
    throw new Error(`${count} evm_mine moved the head from ${before} to ${after}`);
}

/**
 * Builds the chain on A: block 1 deploys the token, then the set-up hands tokens to the senders
 * and 1 unit to each recipient (so that every timed transfer is the same: non-zero to non-zero
 * balances) and mines one probe transfer to learn its gas; then runs of full and empty blocks.
 */
async function buildChain(a, chainId) {
  const rpc = a.rpc;
  const keys = devKeys();
  const accounts = (await rpc.call("eth_accounts")).map((x) => x.toLowerCase());
  for (const k of keys.slice(0, opts.senders))
    if (!accounts.includes(k.address.toLowerCase()))
      throw new Error(`${k.address} is not among the node's development accounts`);
  const senders = keys.slice(0, opts.senders).map((k) => ({ ...k, nonce: 0 }));
  const recipients = Array.from({ length: opts.recipients }, (_, i) =>
    ethers.getAddress(ethers.dataSlice(ethers.id(`nodex-bench-sync-recipient-${i}`), 12)),
  );
  const clients = Array.from({ length: opts.connections }, () => new RPCClient(a.port));
  const blocks = []; // {number, txs, gasUsed, gasLimit, kind}
  const record = (b, kind) =>
    blocks.push({
      number: Number(b.number),
      txs: b.transactions.length,
      gasUsed: Number(b.gasUsed),
      gasLimit: Number(b.gasLimit),
      kind,
    });
  const token = compileToken();
  const t0 = Date.now();

  // Block 1: the token.
  const s0 = senders[0];
  s0.nonce = Number(await rpc.call("eth_getTransactionCount", [s0.address, "latest"]));
  const deploy = signWith(s0.key, {
    chainId,
    nonce: s0.nonce++,
    gasPrice: 0n,
    gasLimit: GAS_DEPLOY,
    data: token.bytecode + token.iface.encodeDeploy([TOKEN_SUPPLY]).slice(2),
  });
  await sendAll([rpc], [{ ...deploy, sender: 0 }]);
  for (const b of await mineUntilEmpty(rpc)) record(b, "setup");
  const deployReceipt = await rpc.call("eth_getTransactionReceipt", [deploy.hash]);
  if (deployReceipt?.status !== "0x1")
    throw new Error(`the token deploy failed: ${JSON.stringify(deployReceipt)}`);
  const tokenAddress = deployReceipt.contractAddress;
  const transferData = (to, value) => token.iface.encodeFunctionData("transfer", [to, value]);
  const GAS = 100_000n;

  // Tokens to the other senders, then 1 unit to each recipient (from the senders in turn).
  const setupTxs = [];
  for (let i = 1; i < senders.length; i++)
    setupTxs.push({
      ...signWith(s0.key, {
        chainId,
        nonce: s0.nonce++,
        gasPrice: 0n,
        gasLimit: GAS,
        to: tokenAddress,
        data: transferData(senders[i].address, SENDER_TOKENS),
      }),
      sender: 0,
    });
  if (setupTxs.length > 0) {
    await sendAll(clients, setupTxs);
    for (const b of await mineUntilEmpty(rpc)) record(b, "setup");
  }
  const fundTxs = recipients.map((to, i) => {
    const k = i % senders.length;
    const s = senders[k];
    return {
      ...signWith(s.key, {
        chainId,
        nonce: s.nonce++,
        gasPrice: 0n,
        gasLimit: GAS,
        to: tokenAddress,
        data: transferData(to, RECIPIENT_TOKENS),
      }),
      sender: k,
    };
  });
  for (let c = 0; c < fundTxs.length; c += 50 * senders.length) {
    await sendAll(clients, fundTxs.slice(c, c + 50 * senders.length));
    for (const b of await mineUntilEmpty(rpc, 20)) record(b, "setup");
  }
  // The probe: one transfer like the timed ones, for its gas.
  const probe = signWith(s0.key, {
    chainId,
    nonce: s0.nonce++,
    gasPrice: 0n,
    gasLimit: GAS,
    to: tokenAddress,
    data: transferData(recipients[0], 1n),
  });
  await sendAll([rpc], [{ ...probe, sender: 0 }]);
  const probeBlock = await mineOne(rpc);
  record(probeBlock, "setup");
  const probeReceipt = await rpc.call("eth_getTransactionReceipt", [probe.hash]);
  if (probeReceipt?.status !== "0x1")
    throw new Error(`the probe transfer failed: ${JSON.stringify(probeReceipt)}`);
  const transferGas = Number(probeReceipt.gasUsed);
  const gasLimit = Number(probeBlock.gasLimit);
  // The miner takes a transaction while the block has room for its gas limit.
  const txsPerBlock =
    opts.txsPerBlock || Math.floor((gasLimit - TRANSFER_GAS_LIMIT) / transferGas) + 1;
  const setupBlocks = blocks.length;
  if (setupBlocks > SETUP_BLOCKS_MAX)
    throw new Error(`the set-up took ${setupBlocks} blocks (more than ${SETUP_BLOCKS_MAX})`);
  log(
    `  set-up: token ${tokenAddress}, ${senders.length} senders, ${recipients.length} recipients, ${setupBlocks} blocks; a transfer uses ${fmtInt(transferGas)} gas, block gas limit ${fmtInt(gasLimit)}: ${txsPerBlock} transfers per full block`,
  );

  // The plan: runs of full then empty blocks, `segment` blocks per pair.
  const body = opts.blocks - setupBlocks;
  const fullPerSegment = Math.round(opts.segment * opts.fullFraction);
  const plan = [];
  for (let i = 0; i < body; i++) plan.push(i % opts.segment < fullPerSegment ? "full" : "empty");
  let recipient = 0;
  let lastLog = Date.now();
  let signMs = 0;
  let sendMs = 0;
  let mineMs = 0;
  for (let i = 0; i < plan.length; ) {
    let j = i;
    while (j < plan.length && plan[j] === plan[i]) j++;
    if (plan[i] === "empty") {
      const m0 = Date.now();
      await mineEmpty(rpc, j - i);
      mineMs += Date.now() - m0;
      const head = Number(await rpc.call("eth_blockNumber"));
      for (let n = head - (j - i) + 1; n <= head; n++)
        blocks.push({ number: n, txs: 0, gasUsed: 0, gasLimit, kind: "empty" });
    } else {
      for (let n = i; n < j; n++) {
        const s1 = Date.now();
        const txs = [];
        for (let t = 0; t < txsPerBlock; t++) {
          const k = t % senders.length;
          const s = senders[k];
          const to = recipients[recipient++ % recipients.length];
          txs.push({
            ...signWith(s.key, {
              chainId,
              nonce: s.nonce++,
              gasPrice: 0n,
              gasLimit: BigInt(TRANSFER_GAS_LIMIT),
              to: tokenAddress,
              data: transferData(to, 1n),
            }),
            sender: k,
          });
        }
        const s2 = Date.now();
        await sendAll(clients, txs);
        const s3 = Date.now();
        const b = await mineOne(rpc);
        mineMs += Date.now() - s3;
        sendMs += s3 - s2;
        signMs += s2 - s1;
        if (b.transactions.length !== txsPerBlock) {
          const pool = await rpc.call("txpool_status");
          throw new Error(
            `block ${Number(b.number)} holds ${b.transactions.length} transactions, not ${txsPerBlock} (gas used ${Number(b.gasUsed)} of ${Number(b.gasLimit)}; pool ${JSON.stringify(pool)})`,
          );
        }
        record(b, "full");
        if (Date.now() - lastLog > 15_000) {
          lastLog = Date.now();
          log(
            `  block ${Number(b.number)} of ${opts.blocks} (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
          );
        }
      }
    }
    i = j;
  }
  for (const c of clients) c.close();
  const head = await rpc.call("eth_getBlockByNumber", ["latest", false]);
  if (Number(head.number) !== opts.blocks)
    throw new Error(`A's head is block ${Number(head.number)}, expected ${opts.blocks}`);
  // Every sender's nonce must be what we sent.
  for (const s of senders) {
    const n = Number(await rpc.call("eth_getTransactionCount", [s.address, "latest"]));
    if (n !== s.nonce) throw new Error(`${s.address}: nonce ${n}, expected ${s.nonce}`);
  }
  const seconds = (Date.now() - t0) / 1000;
  const full = blocks.filter((b) => b.kind === "full");
  return {
    seconds,
    signSeconds: signMs / 1000,
    sendSeconds: sendMs / 1000,
    mineSeconds: mineMs / 1000,
    token: tokenAddress,
    solc: token.solc,
    transferGas,
    gasLimit,
    txsPerBlock,
    setupBlocks,
    fullBlocks: full.length,
    emptyBlocks: blocks.filter((b) => b.kind === "empty").length,
    transactions: blocks.reduce((n, b) => n + b.txs, 0),
    gasUsed: blocks.reduce((n, b) => n + b.gasUsed, 0),
    fullGasUsedMin: full.length ? Math.min(...full.map((b) => b.gasUsed)) : 0,
    head: { number: Number(head.number), hash: head.hash, stateRoot: head.stateRoot },
  };
}

// ---------------------------------------------------------------------------------------------
// Run

const resultsDir = join(benchDir, "results");
const stamp = new Date().toISOString().replace(/[:.]/g, "-");

function copyProfile(dir, label) {
  return keepProfile(dir, join(resultsDir, `sync-${stamp}-${label}.cpuprofile`), label);
}

async function main() {
  const started = Date.now();
  ensureBenchDeps(["ethers", "solc"]);
  ensureNodexBuilt(args.build);
  ethers = await loadEthers();
  mkdirSync(resultsDir, { recursive: true });
  const result = {
    bench: "sync",
    date: new Date().toISOString(),
    options: opts,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      freeMemGiB: Math.round(freemem() / 2 ** 30),
      node: process.version,
    },
    nodex: gitCommit(),
    tmp,
  };
  log(
    `sync bench: ${opts.blocks} blocks, ${Math.round(opts.fullFraction * 100)}% full of ERC-20 transfers; Nodex ${result.nodex}, Node ${process.version}, temp ${tmp}`,
  );

  const aDir = join(tmp, "a");
  let a;
  let b;
  try {
    // 1. A builds the chain.
    log("A: building the chain");
    a = await startNode("A", {
      datadir: aDir,
      p2pHost: "127.0.0.2",
      logFile: join(tmp, "a-build.log"),
    });
    result.commandA = a.command;
    const chainId = Number(await a.rpc.call("eth_chainId"));
    result.build = await buildChain(a, chainId);
    const g = result.build;
    log(
      `  built ${fmtInt(opts.blocks)} blocks in ${g.seconds.toFixed(0)} s (sign ${g.signSeconds.toFixed(0)} s, send ${g.sendSeconds.toFixed(0)} s, mine ${g.mineSeconds.toFixed(0)} s): ${fmtInt(g.fullBlocks)} full (${g.txsPerBlock} transfers, ≥ ${fmtInt(g.fullGasUsedMin)} gas each), ${fmtInt(g.emptyBlocks)} empty, ${g.setupBlocks} set-up; ${fmtInt(g.transactions)} transactions, ${(g.gasUsed / 1e6).toFixed(1)} Mgas; head ${g.head.hash}`,
    );
    await stopNode(a);
    a = undefined;

    // 2. Export, then a timed import into a fresh datadir.
    const file = join(tmp, "chain.rlp");
    log("export");
    const ex = await runCommand(
      ["export", file, ...NETWORK, "--datadir", aDir, "--log-format", "json"],
      join(tmp, "export.log"),
    );
    if (ex.code !== 0)
      throw new Error(
        `nodex export exited with ${ex.code ?? ex.signal}:\n${indent(readTail(join(tmp, "export.log"), 12), "    | ")}`,
      );
    const fileBytes = readFileSync(file).length;
    result.export = { seconds: ex.seconds, bytes: fileBytes };
    log(`  ${(fileBytes / 2 ** 20).toFixed(1)} MiB in ${ex.seconds.toFixed(1)} s`);

    log("import (timed)");
    const importProfDir = join(tmp, "import-prof");
    const busy0 = machineBusySeconds();
    const im = await runCommand(
      ["import", file, ...NETWORK, "--datadir", join(tmp, "imported"), "--log-format", "json"],
      join(tmp, "import.log"),
      opts.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", importProfDir] : [],
    );
    const busy1 = machineBusySeconds();
    if (im.code !== 0)
      throw new Error(
        `nodex import exited with ${im.code ?? im.signal}:\n${indent(readTail(join(tmp, "import.log"), 12), "    | ")}`,
      );
    const summary =
      /imported (\d+) blocks, skipped (\d+) already there; head (\d+) (0x[0-9a-f]+), state root (0x[0-9a-f]+)/.exec(
        im.output,
      );
    if (!summary)
      throw new Error(
        `no summary line from nodex import:\n${indent(readTail(join(tmp, "import.log"), 12), "    | ")}`,
      );
    result.import = {
      seconds: im.seconds,
      cpuSeconds: im.cpuSeconds,
      otherCPU: busy0 !== undefined ? Math.max(0, busy1 - busy0 - (im.cpuSeconds ?? 0)) : undefined,
      imported: Number(summary[1]),
      skipped: Number(summary[2]),
      head: { number: Number(summary[3]), hash: summary[4], stateRoot: summary[5] },
      command: `node apps/node/bin/nodex.js import <file> ${NETWORK.join(" ")} --datadir <fresh> --log-format json`,
    };
    if (
      result.import.head.hash !== g.head.hash ||
      result.import.head.stateRoot !== g.head.stateRoot
    )
      throw new Error(
        `the import's head ${summary[4]} (state root ${summary[5]}) is not A's ${g.head.hash} (${g.head.stateRoot})`,
      );
    if (result.import.imported !== opts.blocks)
      throw new Error(`nodex import imported ${summary[1]} blocks, not ${opts.blocks}`);
    log(
      `  ${fmtInt(result.import.imported)} blocks in ${im.seconds.toFixed(1)} s (${im.cpuSeconds?.toFixed(1)} s CPU); head and state root are A's`,
    );
    if (opts.cpuProf) result.import.profile = copyProfile(importProfDir, "import");

    // 3. A serves the chain; a fresh B syncs it.
    log("sync (timed)");
    a = await startNode("A", {
      datadir: aDir,
      p2pHost: "127.0.0.2",
      logFile: join(tmp, "a-serve.log"),
    });
    const aHead = await a.rpc.call("eth_getBlockByNumber", ["latest", false]);
    if (aHead.hash !== g.head.hash)
      throw new Error(`A restarted at ${aHead.hash}, not ${g.head.hash}`);
    const bProfDir = join(tmp, "b-prof");
    const bLog = join(tmp, "b.log");
    const aCPU0 = cpuSeconds(a.handle.pid);
    const busyS0 = machineBusySeconds();
    const bMetrics = await freePort();
    b = await startNode("B", {
      datadir: join(tmp, "b"),
      p2pHost: "127.0.0.3",
      extra: ["--bootnodes", a.p2p, "--metrics-addr", `127.0.0.1:${bMetrics}`],
      nodeArgs: opts.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", bProfDir] : [],
      logFile: bLog,
    });
    const readyS = Number(process.hrtime.bigint() - b.t0) / 1e9;
    const samples = [];
    let lastSample = 0;
    let bHead;
    let bCPU;
    const deadline = Date.now() + opts.syncTimeout * 1000;
    for (;;) {
      bHead = await b.rpc.call("eth_getBlockByNumber", ["latest", false]);
      const c = cpuSeconds(b.handle.pid);
      if (c !== undefined) bCPU = c;
      if (bHead.hash === g.head.hash) break;
      if (b.handle.done)
        throw new Error(`B exited while syncing:\n${indent(readTail(bLog, 12), "    | ")}`);
      // A sync that one side gave up on (B banned A or stopped on what A answered, or A banned
      // B) does not finish: the ban lasts minutes.
      const gaveUp = [
        ...logLines(bLog, "Banning peer: bad reputation").map((l) => ({ ...l, by: "B" })),
        ...logLines(bLog, "Sync stopped: the peer answered what the chain cannot take").map(
          (l) => ({ ...l, by: "B" }),
        ),
        ...logLines(a.logFile, "Banning peer: bad reputation").map((l) => ({ ...l, by: "A" })),
      ];
      if (gaveUp.length > 0) {
        const stops = logLines(bLog, "Sync from a peer stopped").map((l) => l.reason);
        result.sync = {
          failed: true,
          afterSeconds: Number(process.hrtime.bigint() - b.t0) / 1e9,
          head: Number(bHead.number),
          gaveUp,
          stops: stops.slice(0, 10),
          commandB: b.command,
        };
        const lines = [
          ...stops.slice(0, 5).map((r) => `Sync from a peer stopped: ${r}`),
          ...gaveUp.map((l) => `${l.by}: ${l.msg}: ${l.reason}`),
        ];
        throw new Error(
          `the sync stopped with B at block ${Number(bHead.number)}:\n${indent(lines.join("\n"), "    | ")}`,
        );
      }
      if (Date.now() > deadline)
        throw new Error(`B is at block ${Number(bHead.number)} after ${opts.syncTimeout} s`);
      if (Date.now() - lastSample >= 2000) {
        lastSample = Date.now();
        const syncing = await b.rpc.call("eth_syncing");
        samples.push({
          s: Number(process.hrtime.bigint() - b.t0) / 1e9,
          head: Number(bHead.number),
          syncing,
        });
      }
      await sleep(100);
    }
    const syncS = Number(process.hrtime.bigint() - b.t0) / 1e9;
    const busyS1 = machineBusySeconds();
    const aCPU1 = cpuSeconds(a.handle.pid);
    if (bHead.stateRoot !== g.head.stateRoot)
      throw new Error(`B's head state root ${bHead.stateRoot} is not A's ${g.head.stateRoot}`);
    const syncedLines = logLines(bLog, "Synced");
    const progressLines = logLines(bLog, "Sync progress");
    const bBytes = await receivedBytes(bMetrics);
    result.sync = {
      seconds: syncS,
      receivedBytes: bBytes,
      readySeconds: readyS,
      cpuSecondsB: bCPU,
      cpuSecondsA: aCPU0 !== undefined && aCPU1 !== undefined ? aCPU1 - aCPU0 : undefined,
      otherCPU:
        busyS0 !== undefined
          ? Math.max(0, busyS1 - busyS0 - (bCPU ?? 0) - (aCPU1 - aCPU0))
          : undefined,
      head: { number: Number(bHead.number), hash: bHead.hash, stateRoot: bHead.stateRoot },
      synced: syncedLines,
      progress: progressLines.map((l) => ({
        time: l.time,
        current: l.current,
        highest: l.highest,
        blocksPerSecond: l.blocksPerSecond,
      })),
      samples,
      commandB: b.command,
    };
    log(
      `  B's head is A's (block ${fmtInt(Number(bHead.number))}, same state root) after ${syncS.toFixed(1)} s (RPC up after ${readyS.toFixed(1)} s)`,
    );
    for (const l of syncedLines)
      log(
        `  B logged "Synced": ${JSON.stringify({ peer: l.peer, head: l.head, imported: l.imported, seconds: l.seconds })}`,
      );
    await stopNode(b);
    b = undefined;
    if (opts.cpuProf) result.sync.profile = copyProfile(bProfDir, "B");

    // 3b. A fresh C joins by snapshot sync (timed the same way).
    log("snap sync (timed)");
    const cLog = join(tmp, "c.log");
    const cMetrics = await freePort();
    const cBusy0 = machineBusySeconds();
    const aCPUc0 = cpuSeconds(a.handle.pid);
    const c = await startNode("C", {
      datadir: join(tmp, "c"),
      p2pHost: "127.0.0.4",
      extra: [
        "--bootnodes",
        a.p2p,
        "--sync-mode",
        "snap",
        "--metrics-addr",
        `127.0.0.1:${cMetrics}`,
      ],
      logFile: cLog,
    });
    let cHead;
    let cCPU;
    const cDeadline = Date.now() + opts.syncTimeout * 1000;
    for (;;) {
      cHead = await c.rpc.call("eth_getBlockByNumber", ["latest", false]);
      const cpu = cpuSeconds(c.handle.pid);
      if (cpu !== undefined) cCPU = cpu;
      if (cHead.hash === g.head.hash) break;
      if (c.handle.done)
        throw new Error(`C exited while syncing:\n${indent(readTail(cLog, 12), "    | ")}`);
      if (Date.now() > cDeadline)
        throw new Error(`C is at block ${Number(cHead.number)} after ${opts.syncTimeout} s`);
      await sleep(100);
    }
    const snapS = Number(process.hrtime.bigint() - c.t0) / 1e9;
    const aCPUc1 = cpuSeconds(a.handle.pid);
    const cBusy1 = machineBusySeconds();
    if (cHead.stateRoot !== g.head.stateRoot)
      throw new Error(`C's head state root ${cHead.stateRoot} is not A's ${g.head.stateRoot}`);
    const installed = logLines(cLog, "Snapshot installed").at(-1);
    const cBytes = await receivedBytes(cMetrics);
    result.snap = {
      seconds: snapS,
      cpuSecondsC: cCPU,
      cpuSecondsA: aCPUc0 !== undefined && aCPUc1 !== undefined ? aCPUc1 - aCPUc0 : undefined,
      otherCPU:
        cBusy0 !== undefined
          ? Math.max(0, cBusy1 - cBusy0 - (cCPU ?? 0) - (aCPUc1 - aCPUc0))
          : undefined,
      receivedBytes: cBytes,
      installed,
      head: { number: Number(cHead.number), hash: cHead.hash, stateRoot: cHead.stateRoot },
      commandC: c.command,
    };
    log(
      `  C's head is A's (same state root) after ${snapS.toFixed(1)} s: pivot ${installed?.pivot}, state ${fmtInt(installed?.nodes ?? 0)} trie nodes and ${installed?.codes ?? 0} codes (${mib(installed?.bytes ?? 0)}), ${installed?.accounts} accounts, ${installed?.slots} slots; headers ${installed?.headersSeconds} s, state ${installed?.stateSeconds} s, pivot block ${installed?.pivotBlockSeconds} s`,
    );
    await stopNode(c);
    await stopNode(a);
    a = undefined;

    // 4. The table.
    const mgas = g.gasUsed / 1e6;
    const synced = syncedLines.at(-1);
    const rows = [
      ["nodex import", result.import.seconds, result.import.cpuSeconds],
      ["sync from A (B start → head = A's)", result.sync.seconds, result.sync.cpuSecondsB],
    ];
    if (synced?.seconds) rows.push(['sync, B\'s "Synced" seconds', synced.seconds, undefined]);
    rows.push([
      "snap sync from A (C start → head = A's)",
      result.snap.seconds,
      result.snap.cpuSecondsC,
    ]);
    log("");
    log(
      `== ${fmtInt(opts.blocks)} blocks (${fmtInt(g.fullBlocks)} full of ${g.txsPerBlock} ERC-20 transfers, ${fmtInt(g.transactions)} transactions, ${mgas.toFixed(1)} Mgas) ==`,
    );
    log("");
    log(
      table(
        ["", "seconds", "blocks/s", "Mgas/s", "CPU s", "÷ import"],
        rows.map(([label, s, cpu]) => [
          label,
          s.toFixed(1),
          opts.blocks / s < 100 ? (opts.blocks / s).toFixed(2) : fmtInt(opts.blocks / s),
          (mgas / s).toFixed(1),
          cpu === undefined ? "—" : cpu.toFixed(1),
          `${(s / result.import.seconds).toFixed(2)}×`,
        ]),
        ["l", "r", "r", "r", "r", "r"],
      ),
    );
    const ratio = result.sync.seconds / result.import.seconds;
    result.ratio = ratio;
    result.figures = {
      importSeconds: result.import.seconds,
      importBlocksPerSecond: opts.blocks / result.import.seconds,
      importMgasPerSecond: mgas / result.import.seconds,
      syncSeconds: result.sync.seconds,
      syncBlocksPerSecond: opts.blocks / result.sync.seconds,
      syncMgasPerSecond: mgas / result.sync.seconds,
      syncedLogSeconds: synced?.seconds,
      ratio,
    };
    log("");
    log(
      `sync time ÷ import time: ${ratio.toFixed(2)}× (target ≤ 1.25×)${ratio > 1.25 ? "  ! above the target" : ""}`,
    );
    const snapRatio = result.sync.seconds / result.snap.seconds;
    result.figures.snapSeconds = result.snap.seconds;
    result.figures.fullOverSnap = snapRatio;
    result.figures.fullBytes = sumOf(result.sync.receivedBytes);
    result.figures.snapBytes = sumOf(result.snap.receivedBytes);
    log(
      `full sync ÷ snap sync: ${snapRatio.toFixed(2)}× the time (target ≥ 10× at 5,000 full blocks); downloaded ${mib(result.figures.fullBytes)} (${Object.entries(
        result.sync.receivedBytes,
      )
        .map(([k, v]) => `${k} ${mib(v)}`)
        .join(", ")}) against ${mib(result.figures.snapBytes)} (${Object.entries(
        result.snap.receivedBytes,
      )
        .map(([k, v]) => `${k} ${mib(v)}`)
        .join(", ")})`,
    );
    log(
      `  A (serving) used ${result.sync.cpuSecondsA?.toFixed(1)} s of CPU during the sync; other processes ${result.sync.otherCPU?.toFixed(1)} s during the sync, ${result.import.otherCPU?.toFixed(1)} s during the import`,
    );
    if (synced)
      log(
        `  B's "Synced" line: imported ${fmtInt(synced.imported)} in ${synced.seconds} s, head ${synced.head}`,
      );
  } finally {
    await stopNode(b);
    await stopNode(a);
    result.runSeconds = (Date.now() - started) / 1000;
    const out = join(resultsDir, `sync-${stamp}.json`);
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    log(
      `\nresults: ${relative(root, out)} (run ${(result.runSeconds / 60).toFixed(1)} min)${opts.keep ? `; kept ${tmp}` : ""}`,
    );
  }
}

main()
  .then(() => cleanupSync())
  .catch((err) => {
    process.stderr.write(`\nsync bench failed: ${err.stack ?? err.message}\n`);
    cleanupSync();
    process.exitCode = 1;
  });
