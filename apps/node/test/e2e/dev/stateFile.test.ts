import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, runCli, startNode } from "../helpers/node.js";

// The state as data: anvil_dumpState and anvil_loadState, --state FILE across restarts, and
// state edits that outlive a kill -9.

const WHALE = "0x00000000000000000000000000000000000beef1";
const CONTRACT = "0x00000000000000000000000000000000000c0de3";
const CODE = "0x60056000f3";
const SLOT = `0x${"07".padStart(64, "0")}`;
const VALUE = `0x${"2a".padStart(64, "0")}`;

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-state-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function result(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

async function edit(url: string): Promise<void> {
  await result(url, "hardhat_setBalance", [WHALE, "0x1234"]);
  await result(url, "hardhat_setCode", [CONTRACT, CODE]);
  await result(url, "hardhat_setStorageAt", [CONTRACT, "0x7", VALUE]);
}

async function expectEdited(url: string): Promise<void> {
  expect(await result(url, "eth_getBalance", [WHALE, "latest"])).toBe("0x1234");
  expect(await result(url, "eth_getCode", [CONTRACT, "latest"])).toBe(CODE);
  expect(await result(url, "eth_getStorageAt", [CONTRACT, SLOT, "latest"])).toBe(VALUE);
}

describe("anvil_dumpState and anvil_loadState", () => {
  it("carry a state from one node to another, whole", async () => {
    const a = await startNode();
    const b = await startNode();
    try {
      await edit(a.url);
      const dump = (await result(a.url, "anvil_dumpState")) as string;
      expect(dump).toMatch(/^0x1f8b/);
      expect(await result(b.url, "eth_getBalance", [WHALE, "latest"])).toBe("0x0");
      expect(await result(b.url, "anvil_loadState", [dump])).toBe(true);
      await expectEdited(b.url);
      // The next block on b runs on the loaded state.
      await result(b.url, "evm_mine");
      await expectEdited(b.url);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("refuses what is not a dump, or a dump that is not whole, and changes nothing", async () => {
    const node = await startNode();
    const source = await startNode();
    try {
      const junk = await call(node.url, "anvil_loadState", ["0x1234"]);
      expect(junk.error?.code).toBe(-32602);
      expect(junk.error?.message).toMatch(/JSON/);
      // A state this node has never seen, so that its nodes are not in its database.
      await edit(source.url);
      const dump = (await result(source.url, "anvil_dumpState")) as string;
      const { gunzipSync } = await import("node:zlib");
      const file = JSON.parse(gunzipSync(Buffer.from(dump.slice(2), "hex")).toString()) as {
        nodes: string[];
        chainId: number;
      };
      // Its root gone: the trie is not complete.
      const partial = { ...file, nodes: file.nodes.slice(1) };
      const partialHex = `0x${Buffer.from(JSON.stringify(partial)).toString("hex")}`;
      await result(node.url, "hardhat_setBalance", [WHALE, "0x5"]);
      const refused = await call(node.url, "anvil_loadState", [partialHex]);
      expect(refused.error?.code).toBe(-32602);
      expect(refused.error?.message).toMatch(/not a complete state/);
      expect(await result(node.url, "eth_getBalance", [WHALE, "latest"])).toBe("0x5");
      const other = { ...file, chainId: 31 };
      const wrongChain = await call(node.url, "anvil_loadState", [
        `0x${Buffer.from(JSON.stringify(other)).toString("hex")}`,
      ]);
      expect(wrongChain.error?.message).toMatch(/chain 31/);
    } finally {
      await Promise.all([node.stop(), source.stop()]);
    }
  });
});

describe("--state FILE", () => {
  it("is written at shutdown and read at the next start, on a new datadir too", async () => {
    const dir = tempDir();
    const path = join(dir, "state.json");
    const first = await startNode({ args: ["--state", path] });
    await edit(first.url);
    expect(await first.stop()).toBe(0);
    expect(existsSync(path)).toBe(true);
    expect(existsSync(`${path}.tmp`)).toBe(false);
    expect(JSON.parse(readFileSync(path, "utf8")).format).toBe("nodex-state/1");
    const second = await startNode({ args: ["--state", path] });
    try {
      await expectEdited(second.url);
    } finally {
      await second.stop();
    }
  });

  it("refuses a damaged file at start, and is refused on public networks", async () => {
    const dir = tempDir();
    const path = join(dir, "bad.json");
    writeFileSync(path, "{not json");
    const bad = await runCli([
      "--regtest",
      "--no-p2p",
      "--rpc-port",
      "0",
      "--datadir",
      join(dir, "d"),
      "--state",
      path,
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--state .*bad\.json: a state dump is JSON text/);
    const testnet = await runCli(["--testnet", "--state", path]);
    expect(testnet.code).not.toBe(0);
    expect(testnet.stderr).toMatch(/--state works on regtest and devnet only/);
  });
});

describe("state edits", () => {
  it("are on disk before the answer: they outlive a kill -9", async () => {
    const datadir = tempDir();
    const first = await startNode({ datadir });
    await edit(first.url);
    first.process.kill("SIGKILL");
    await first.stop();
    const second = await startNode({ datadir });
    try {
      await expectEdited(second.url);
    } finally {
      await second.stop();
    }
  });

  it("an impersonated account's waiting transaction outlives a kill -9 with its sender", async () => {
    const datadir = tempDir();
    const first = await startNode({ datadir });
    await result(first.url, "hardhat_setBalance", [WHALE, "0xde0b6b3a7640000"]);
    await result(first.url, "hardhat_impersonateAccount", [WHALE]);
    await result(first.url, "evm_setAutomine", [false]);
    const hash = (await result(first.url, "eth_sendTransaction", [
      { from: WHALE, to: CONTRACT, value: "0x9" },
    ])) as string;
    first.process.kill("SIGKILL");
    await first.stop();
    // Back with automine on: the journaled transaction is mined as the node starts.
    const second = await startNode({ datadir });
    try {
      const receipt = (await result(second.url, "eth_getTransactionReceipt", [hash])) as {
        from: string;
        status: string;
      };
      expect(receipt.from).toBe(WHALE);
      expect(receipt.status).toBe("0x1");
      expect(await result(second.url, "eth_getBalance", [CONTRACT, "latest"])).toBe("0x9");
    } finally {
      await second.stop();
    }
  });
});
