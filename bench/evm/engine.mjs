#!/usr/bin/env node
// One in-process engine of bench/evm, in a process of its own: Nodex's patches to
// @ethereumjs/evm are installed on the library's classes for the whole process, so the library
// alone must never share a process with Nodex's Executor.
//
//   node bench/evm/engine.mjs <engine> <plan.json> <out.json>
//
// The plan (written by run.mjs) holds the programs: creation code, the caller, the gas, the
// warm-up and measured calldata, and a time budget. Each program is deployed, called once per
// warm-up input, then once per measured input (at least `minRuns`, then until the budget is
// spent); every call is timed alone (performance.now() around the awaited call) and its return
// data kept. The answers go to out.json.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/**
 * A package of the workspace's node_modules (the versions Nodex runs on), not of
 * bench/node_modules, which holds older @ethereumjs packages for Hardhat and Ganache.
 */
async function rootImport(name) {
  const dir = join(root, "node_modules", name);
  const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const entry = json.exports["."].import?.default ?? json.exports["."].default;
  const mod = await import(pathToFileURL(join(dir, entry)).href);
  return { mod, version: json.version };
}

const hexToBytes = (hex) => Uint8Array.from(Buffer.from(hex.replace(/^0x/, ""), "hex"));
const bytesToHex = (bytes) => `0x${Buffer.from(bytes).toString("hex")}`;

/** Nodex's Executor on a WorldState in a temp LevelDB; `libraryCalls` runs calls on the library. */
async function nodexEngine(libraryCalls) {
  const evmLib = await rootImport("@nodex/evm");
  const { Executor } = evmLib.mod;
  // Counts the calls the interpreter leaves to the library: the Executor's library path is the
  // library's runCall (creations, here the deployments, are not counted).
  const { EVM } = (await rootImport("@ethereumjs/evm")).mod;
  const runCall = EVM.prototype.runCall;
  let counting = false;
  let libraryRuns = 0;
  EVM.prototype.runCall = function (opts) {
    if (counting && opts.message === undefined) libraryRuns++;
    return runCall.call(this, opts);
  };
  const stateLib = await rootImport("@nodex/state");
  const typesLib = await rootImport("@nodex/types");
  const { Database, NodeStore, WorldState, useFastRlp, quietLibraryDebug } = stateLib.mod;
  const { NETWORKS, deriveDevAccounts, signTransaction } = typesLib.mod;
  // As the node does at start (apps/node/src/fastPaths.ts).
  useFastRlp();
  quietLibraryDebug();
  const network = NETWORKS.regtest;
  const executor = new Executor(network, libraryCalls ? { libraryCalls: true } : {});
  const [alice] = deriveDevAccounts();
  const dir = mkdtempSync(join(tmpdir(), "nodex-bench-evm-"));
  const db = await Database.open(join(dir, "db"));
  const state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice.address, 10n ** 24n);
  const block = {
    number: 1n,
    timestamp: 1_700_000_000n,
    coinbase: hexToBytes(`0x${"00".repeat(19)}cb`),
    gasLimit: 30_000_000n,
    difficulty: 1n,
    minimumGasPrice: 0n,
  };
  let nonce = 0n;
  return {
    version: `@nodex/evm ${JSON.parse(readFileSync(join(root, "packages/evm/package.json"), "utf8")).version}, @ethereumjs/evm ${(await rootImport("@ethereumjs/evm")).version}`,
    async deploy(creation) {
      const tx = signTransaction(
        {
          nonce: nonce++,
          gasPrice: 0n,
          gasLimit: 29_000_000n,
          to: null,
          value: 0n,
          data: hexToBytes(creation),
        },
        alice.privateKey,
        network.chainId,
      );
      const out = await executor.executeTransaction(state, tx, block, 0n);
      if (out.status !== 1) throw new Error(`deployment failed: ${out.error}`);
      await state.commit();
      return out.contractAddress;
    },
    async call(to, from, data, gas) {
      counting = true;
      const before = libraryRuns;
      let r;
      try {
        r = await executor.call(
          state,
          { from: hexToBytes(from), to, data: hexToBytes(data), gas },
          block,
        );
      } finally {
        counting = false;
      }
      return {
        ok: r.success,
        output: bytesToHex(r.returnValue),
        gasUsed: r.gasUsed,
        error: r.error,
        library: libraryRuns > before,
      };
    },
    async close() {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** @ethereumjs/evm alone: createEVM (its default simple state manager), runCall. */
async function ethereumjsEngine() {
  const evmLib = await rootImport("@ethereumjs/evm");
  const { Common, Hardfork, Mainnet } = (await rootImport("@ethereumjs/common")).mod;
  const { createAddressFromString } = (await rootImport("@ethereumjs/util")).mod;
  const common = new Common({ chain: Mainnet, hardfork: Hardfork.Cancun });
  const evm = await evmLib.mod.createEVM({ common });
  const deployer = createAddressFromString(`0x${"00".repeat(19)}aa`);
  return {
    version: `@ethereumjs/evm ${evmLib.version}`,
    async deploy(creation) {
      const r = await evm.runCall({
        caller: deployer,
        origin: deployer,
        gasLimit: 29_000_000n,
        data: hexToBytes(creation),
      });
      if (r.execResult.exceptionError)
        throw new Error(`deployment failed: ${r.execResult.exceptionError.error}`);
      await evm.journal.cleanup();
      return r.createdAddress;
    },
    async call(to, from, data, gas) {
      const caller = createAddressFromString(from);
      // An eth_call: whatever the call writes is dropped, so every call starts from the same state.
      await evm.journal.checkpoint();
      try {
        const r = await evm.runCall({
          caller,
          origin: caller,
          to,
          gasLimit: gas,
          data: hexToBytes(data),
          skipBalance: true,
        });
        const error = r.execResult.exceptionError?.error;
        return {
          ok: error === undefined,
          output: bytesToHex(r.execResult.returnValue),
          gasUsed: r.execResult.executionGasUsed,
          error,
        };
      } finally {
        await evm.journal.revert();
        await evm.journal.cleanup();
      }
    },
    async close() {},
  };
}

const ENGINES = {
  nodex: () => nodexEngine(false),
  "nodex-library": () => nodexEngine(true),
  ethereumjs: ethereumjsEngine,
};

async function main() {
  const [engineId, planFile, outFile] = process.argv.slice(2);
  const make = ENGINES[engineId];
  if (!make || !planFile || !outFile) {
    process.stderr.write(
      `usage: node bench/evm/engine.mjs <${Object.keys(ENGINES).join("|")}> <plan.json> <out.json>\n`,
    );
    process.exit(2);
  }
  const plan = JSON.parse(readFileSync(planFile, "utf8"));
  const engine = await make();
  const out = { engine: engineId, version: engine.version, node: process.version, programs: {} };
  try {
    for (const p of plan.programs) {
      const to = await engine.deploy(p.creation);
      const gas = BigInt(p.gas);
      const run = async (data) => {
        const t0 = performance.now();
        const r = await engine.call(to, plan.from, data, gas);
        const ms = performance.now() - t0;
        if (!r.ok) throw new Error(`${p.id}: the call failed (${r.error}): ${r.output}`);
        return { ms, output: r.output, gasUsed: String(r.gasUsed), library: r.library === true };
      };
      const warmups = [];
      const w0 = performance.now();
      for (const data of p.warmup) {
        if (warmups.length >= p.minWarmup && performance.now() - w0 > p.warmupBudgetMs) break;
        warmups.push(await run(data));
      }
      const runs = [];
      const t0 = performance.now();
      for (const data of p.inputs) {
        if (runs.length >= p.minRuns && performance.now() - t0 > p.budgetMs) break;
        runs.push(await run(data));
      }
      out.programs[p.id] = {
        warmupMs: warmups.map((w) => w.ms),
        ms: runs.map((r) => r.ms),
        outputs: runs.map((r) => r.output),
        gasUsed: runs.map((r) => r.gasUsed),
        libraryRuns: runs.filter((r) => r.library).length,
      };
      process.stdout.write(
        `${p.id}: ${runs.length} runs, ${runs.map((r) => r.ms.toFixed(1)).join(" ")} ms\n`,
      );
    }
  } finally {
    await engine.close();
  }
  writeFileSync(outFile, `${JSON.stringify(out)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
