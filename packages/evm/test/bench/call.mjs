// Micro-benchmark of Executor.call: ERC-20 balanceOf for 1,000 holders in turn, on a state
// opened from disk, as eth_call runs it (bench/chain/Token.sol, compiled as bench/chain/run.mjs
// does), with N calls in flight as an RPC server under load has them. `eoa` calls the holders
// themselves (accounts without code): the cost of a call around the code it runs.
//   npm run build && node packages/evm/test/bench/call.mjs [seconds] [in flight] [token|eoa]
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/evm/test/bench/call.mjs 5 50
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor } from "@nodex/evm";
import { Database, NodeCache, NodeStore, WorldState } from "@nodex/state";
import { bytesToHex, deriveDevAccounts, hexToBytes, NETWORKS, signTransaction } from "@nodex/types";

const seconds = Number(process.argv[2] ?? 3);
const inFlight = Number(process.argv[3] ?? 1);
const target = process.argv[4] ?? "token";
if (!(seconds > 0) || !Number.isSafeInteger(inFlight) || inFlight < 1)
  throw new Error("usage: call.mjs [seconds > 0] [in flight ≥ 1] [token|eoa]");
if (target !== "token" && target !== "eoa") throw new Error(`unknown target ${target}`);

const HOLDERS = 1_000;
const token = JSON.parse(readFileSync(new URL("./token.json", import.meta.url), "utf8"));
const [alice] = deriveDevAccounts();
const block = {
  number: 2n,
  timestamp: 1_700_000_000n,
  coinbase: hexToBytes(`0x${"00".repeat(19)}cb`),
  gasLimit: 6_800_000n,
  difficulty: 1n,
  minimumGasPrice: 0n,
};
const word = (n) => BigInt(n).toString(16).padStart(64, "0");
const holder = (i) => (0x1000 + i).toString(16).padStart(40, "0");

const dir = mkdtempSync(join(tmpdir(), "nodex-evm-bench-"));
const db = await Database.open(join(dir, "db"));
const nodes = new NodeCache();
const executor = new Executor(NETWORKS.regtest);
try {
  const store = new NodeStore(db, nodes);
  const setup = await WorldState.open(store);
  await setup.setBalance(alice.address, 10n ** 24n);
  const send = async (nonce, to, data) => {
    const tx = signTransaction(
      { nonce, gasPrice: 1n, gasLimit: 2_000_000n, to, value: 0n, data: hexToBytes(data) },
      alice.privateKey,
      33,
    );
    const out = await executor.executeTransaction(setup, tx, block, 0n);
    if (out.status !== 1) throw new Error(`transaction ${nonce} failed: ${out.error}`);
    return out;
  };
  const deployed = await send(0n, null, `${token.bytecode}${word(10n ** 24n)}`);
  // Holder i gets i + 1 tokens: balanceOf reads 1,000 different slots.
  for (let i = 0; i < HOLDERS; i++)
    await send(
      BigInt(i + 1),
      deployed.contractAddress,
      `0xa9059cbb${word(`0x${holder(i)}`)}${word(i + 1)}`,
    );
  const root = await setup.commit();
  await db.write(store.takeWrites());
  store.confirmWrites();

  // a fresh state at that root, as the ledger opens for calls
  const state = await WorldState.open(new NodeStore(db, nodes), root);
  const requests = Array.from({ length: HOLDERS }, (_, i) => ({
    to: target === "eoa" ? hexToBytes(`0x${holder(i)}`) : deployed.contractAddress,
    data: hexToBytes(`0x70a08231${word(`0x${holder(i)}`)}`),
  }));
  const first = await executor.call(state, requests[4], block);
  const expected = target === "eoa" ? 0n : 5n;
  const answer = first.returnValue.length === 0 ? 0n : BigInt(bytesToHex(first.returnValue));
  if (!first.success || answer !== expected)
    throw new Error(`unexpected result ${bytesToHex(first.returnValue)} ${first.error}`);

  let k = 0;
  const caller = async (until) => {
    let n = 0;
    while (performance.now() < until) {
      await executor.call(state, requests[k++ % HOLDERS], block);
      n++;
    }
    return n;
  };
  const run = async (ms) => {
    const until = performance.now() + ms;
    const counts = await Promise.all(Array.from({ length: inFlight }, () => caller(until)));
    return counts.reduce((a, b) => a + b, 0);
  };
  await run(1_000); // warm-up
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const n = await run(seconds * 1_000);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(
    `${target}, ${inFlight} in flight: ${n} calls in ${ms.toFixed(0)} ms: ` +
      `${((n / ms) * 1000).toFixed(0)} calls/s, ${((ms * 1000) / n).toFixed(1)} µs/call wall, ` +
      `${((cpu.user + cpu.system) / n).toFixed(1)} µs/call CPU; gasUsed ${first.gasUsed}\n`,
  );
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
