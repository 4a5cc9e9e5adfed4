// Runs the same transactions on Hardhat's node and on Nodex and compares their
// debug_traceTransaction struct logs step by step (op, pc, gas, gasCost, depth, stack depth) and
// the frames the logs open (the opcode and depth of each). With --record, writes both outputs
// to apps/node/test/e2e/trace/fixtures/hardhat.json, which the e2e suite checks Nodex against.
//
//   node bench/trace/compare.mjs [--record]      (after `npm run build`)
//   npx biome format --write apps/node/test/e2e/trace/fixtures/hardhat.json  (after --record)
//
// Runs no load: two fresh nodes, three transactions each, a few seconds.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const require = createRequire(join(root, "package.json"));
const benchRequire = createRequire(join(root, "bench", "package.json"));
const FIXTURE = join(root, "apps/node/test/e2e/trace/fixtures/hardhat.json");
const SOURCE = join(root, "apps/node/test/e2e/trace/Tracing.sol");
/** Hardhat's first default account, funded by Nodex on regtest too. */
const SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/** The transactions both nodes run, in order, from SENDER (fresh chains: the same addresses). */
export const CASES = [
  { name: "run", method: "run", args: [], value: "0x3", gas: "0x2dc6c0" },
  { name: "grow", method: "grow", args: [4096, 8], value: "0x0", gas: "0xf4240" },
];

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function rpc(url, method, params = []) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function waitReady(url, child, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
    try {
      await rpc(url, "eth_chainId");
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`not ready after ${ms} ms`);
}

function compileTracing() {
  const solc = require("solc");
  const { readFileSync } = require("node:fs");
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: "Solidity",
        sources: { "Tracing.sol": { content: readFileSync(SOURCE, "utf8") } },
        settings: {
          evmVersion: "cancun",
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
        },
      }),
    ),
  );
  const c = out.contracts["Tracing.sol"].Tracing;
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}

async function receipt(url, hash) {
  for (let i = 0; i < 100; i++) {
    const r = await rpc(url, "eth_getTransactionReceipt", [hash]);
    if (r) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`no receipt for ${hash}`);
}

/** What is compared of a struct log: one row per step. */
export function reduceSteps(structLogs) {
  return structLogs.map((l) => [l.op, l.pc, l.gas, l.gasCost, l.depth]);
}

/** The frames a struct log opens: [opcode, depth] at each step followed by a deeper one. */
export function framesOf(steps) {
  const out = [];
  for (let i = 1; i < steps.length; i++)
    if (steps[i][4] > steps[i - 1][4]) out.push([steps[i - 1][0], steps[i - 1][4]]);
  return out;
}

/** Runs CASES on the node at `url`; the reduced struct logs of each. */
async function runCases(url, artifact, ethers) {
  const iface = new ethers.Interface(artifact.abi);
  const deployHash = await rpc(url, "eth_sendTransaction", [
    { from: SENDER, data: artifact.bytecode, gas: "0x2dc6c0" },
  ]);
  const deployed = await receipt(url, deployHash);
  const out = {};
  for (const c of CASES) {
    const hash = await rpc(url, "eth_sendTransaction", [
      {
        from: SENDER,
        to: deployed.contractAddress,
        data: iface.encodeFunctionData(c.method, c.args),
        value: c.value,
        gas: c.gas,
      },
    ]);
    const r = await receipt(url, hash);
    const trace = await rpc(url, "debug_traceTransaction", [
      hash,
      { disableMemory: true, disableStorage: true },
    ]);
    out[c.name] = {
      status: r.status,
      gasUsed: Number(r.gasUsed),
      failed: trace.failed,
      steps: reduceSteps(trace.structLogs),
      stackDepths: trace.structLogs.map((l) => l.stack?.length ?? 0),
    };
  }
  return { contract: deployed.contractAddress, cases: out };
}

/**
 * Where Nodex follows geth and Hardhat does not (`hh` Hardhat's step, `nx` Nodex's): Hardhat
 * counts the gas handed to a CREATE or CREATE2 in the opcode's gasCost (geth and Nodex count it
 * for the CALL family only), and gives a step that runs out of gas the gas left as its cost
 * (geth and Nodex give the opcode's cost).
 */
export function knownDifference(hh, nx, field) {
  if (field !== "gasCost") return false;
  if (hh[0] === "CREATE" || hh[0] === "CREATE2") return true;
  return hh[3] === hh[2] && nx[3] > nx[2];
}

/** Differences between two runs of CASES, as readable lines (empty when they agree). */
export function compareRuns(a, b, names = ["hardhat", "nodex"]) {
  const diffs = [];
  for (const c of CASES) {
    const x = a.cases[c.name];
    const y = b.cases[c.name];
    if (x.gasUsed !== y.gasUsed) diffs.push(`${c.name}: gasUsed ${x.gasUsed} vs ${y.gasUsed}`);
    if (x.steps.length !== y.steps.length)
      diffs.push(`${c.name}: ${x.steps.length} vs ${y.steps.length} steps`);
    const n = Math.min(x.steps.length, y.steps.length);
    let shown = 0;
    for (let i = 0; i < n && shown < 10; i++) {
      const [p, q] = [x.steps[i], y.steps[i]];
      const fields = ["op", "pc", "gas", "gasCost", "depth"].filter(
        (f, k) => p[k] !== q[k] && !knownDifference(p, q, f),
      );
      if (x.stackDepths[i] !== y.stackDepths[i]) fields.push("stack depth");
      if (fields.length > 0) {
        diffs.push(
          `${c.name} step ${i}: ${fields.join(", ")}: ${names[0]} ${JSON.stringify(p)} vs ${names[1]} ${JSON.stringify(q)}`,
        );
        shown++;
      }
    }
    const [fx, fy] = [framesOf(x.steps), framesOf(y.steps)];
    if (JSON.stringify(fx) !== JSON.stringify(fy))
      diffs.push(`${c.name}: frames ${JSON.stringify(fx)} vs ${JSON.stringify(fy)}`);
  }
  return diffs;
}

async function main() {
  const record = process.argv.includes("--record");
  const ethers = require("ethers");
  const artifact = compileTracing();
  const children = [];
  const tmp = mkdtempSync(join(tmpdir(), "nodex-trace-compare-"));
  try {
    const hhPort = await freePort();
    const hardhatCli = benchRequire.resolve("hardhat/internal/cli/cli.js");
    const hardhatVersion = benchRequire("hardhat/package.json").version;
    const hh = spawn(
      process.execPath,
      [hardhatCli, "node", "--hostname", "127.0.0.1", "--port", String(hhPort)],
      {
        cwd: join(here, "hardhat"),
        env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1" },
        stdio: "ignore",
      },
    );
    children.push(hh);
    const nxPort = await freePort();
    const nx = spawn(
      process.execPath,
      [
        join(root, "apps/node/bin/nodex.js"),
        "--regtest",
        "--datadir",
        join(tmp, "nodex"),
        "--rpc-port",
        String(nxPort),
        "--no-p2p",
        "--rpc-modules",
        "eth,net,web3,rpc,debug",
      ],
      { stdio: "ignore" },
    );
    children.push(nx);
    const hhUrl = `http://127.0.0.1:${hhPort}`;
    const nxUrl = `http://127.0.0.1:${nxPort}`;
    await Promise.all([waitReady(hhUrl, hh, 90_000), waitReady(nxUrl, nx, 30_000)]);
    const hardhat = await runCases(hhUrl, artifact, ethers);
    const nodex = await runCases(nxUrl, artifact, ethers);
    const diffs = compareRuns(hardhat, nodex);
    for (const c of CASES)
      console.log(
        `${c.name}: ${nodex.cases[c.name].steps.length} steps on Nodex, ${hardhat.cases[c.name].steps.length} on Hardhat ${hardhatVersion}`,
      );
    console.log(diffs.length === 0 ? "struct logs agree" : diffs.join("\n"));
    if (record) {
      writeFileSync(
        FIXTURE,
        `${JSON.stringify({ hardhatVersion, source: "apps/node/test/e2e/trace/Tracing.sol", cases: CASES, hardhat, nodex, differences: diffs }, null, 0)}\n`,
      );
      console.log(`recorded ${FIXTURE}`);
    }
    process.exitCode = diffs.length === 0 ? 0 : 1;
  } finally {
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? undefined
          : new Promise((resolve) => {
              child.once("exit", resolve);
              child.kill("SIGTERM");
            }),
      ),
    );
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
