// Micro-benchmark of Executor.call: ERC-20 balanceOf on a state opened from disk, as eth_call
// runs it (bench/chain/Token.sol, compiled as bench/chain/run.mjs does).
//   npm run build && node packages/evm/test/bench/call.mjs [seconds]
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/evm/test/bench/call.mjs 5
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor } from "@nodex/evm";
import { Database, NodeCache, NodeStore, WorldState } from "@nodex/state";
import { bytesToHex, deriveDevAccounts, hexToBytes, NETWORKS, signTransaction } from "@nodex/types";

const seconds = Number(process.argv[2] ?? 3);
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

const dir = mkdtempSync(join(tmpdir(), "nodex-evm-bench-"));
const db = await Database.open(join(dir, "db"));
const nodes = new NodeCache();
const executor = new Executor(NETWORKS.regtest);
try {
  const store = new NodeStore(db, nodes);
  const setup = await WorldState.open(store);
  await setup.setBalance(alice.address, 10n ** 24n);
  const deploy = signTransaction(
    {
      nonce: 0n,
      gasPrice: 1n,
      gasLimit: 2_000_000n,
      to: null,
      value: 0n,
      data: hexToBytes(`${token.bytecode}${word(10n ** 24n)}`),
    },
    alice.privateKey,
    33,
  );
  const out = await executor.executeTransaction(setup, deploy, block, 0n);
  if (out.status !== 1) throw new Error(`deploy failed: ${out.error}`);
  const root = await setup.commit();
  await db.write(store.takeWrites());
  store.confirmWrites();

  // a fresh state at that root, as the ledger opens for calls
  const state = await WorldState.open(new NodeStore(db, nodes), root);
  const req = {
    to: out.contractAddress,
    data: hexToBytes(`0x70a08231${bytesToHex(alice.address).slice(2).padStart(64, "0")}`),
  };
  const first = await executor.call(state, req, block);
  if (!first.success || BigInt(bytesToHex(first.returnValue)) !== 10n ** 24n)
    throw new Error(`unexpected result ${bytesToHex(first.returnValue)} ${first.error}`);
  // warm-up
  for (let i = 0; i < 2000; i++) await executor.call(state, req, block);
  let n = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) await executor.call(state, req, block);
    n += 100;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(
    `${n} calls in ${ms.toFixed(0)} ms: ${((n / ms) * 1000).toFixed(0)} calls/s, ` +
      `${((ms * 1000) / n).toFixed(1)} µs/call wall, ${((cpu.user + cpu.system) / n).toFixed(1)} µs/call CPU; ` +
      `gasUsed ${first.gasUsed}\n`,
  );
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
