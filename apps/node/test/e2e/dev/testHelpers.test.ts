import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, runCli, startNode } from "../helpers/node.js";

// The test helpers of Hardhat's network and Anvil (hardhat_*, anvil_*, the evm_ additions,
// eth_sendUnsignedTransaction) as the tools call them, over raw JSON-RPC.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const DEV0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const WHALE = "0x00000000000000000000000000000000000beef1";
const OTHER = "0x00000000000000000000000000000000000c0de2";

let node: RunningNode;
let provider: JsonRpcProvider;
let wallet: Wallet;
beforeAll(async () => {
  node = await startNode({ args: ["--client-version", "HardhatNetwork/2.22.0/nodex"] });
  provider = new JsonRpcProvider(node.url, 33, {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  wallet = new Wallet(KEY0, provider);
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}
async function failure(method: string, params: unknown[] = []) {
  const res = await call(node.url, method, params);
  expect(res.result, `${method} should fail`).toBeUndefined();
  return res.error as { code: number; message: string };
}
const head = async () =>
  (await result("eth_getBlockByNumber", ["latest", false])) as {
    number: string;
    timestamp: string;
    gasLimit: string;
    miner: string;
    stateRoot: string;
  };
const balanceOf = async (a: string, block = "latest") =>
  BigInt((await result("eth_getBalance", [a, block])) as string);

describe("web3_clientVersion", () => {
  it("answers the --client-version given on a development network", async () => {
    expect(await result("web3_clientVersion")).toBe("HardhatNetwork/2.22.0/nodex");
  });
});

describe("state edits without a block", () => {
  it("setBalance, setNonce, setCode and setStorageAt change the latest state, not the block number", async () => {
    const before = await head();
    expect(await result("hardhat_setBalance", [WHALE, "0xde0b6b3a7640000"])).toBe(true);
    expect(await balanceOf(WHALE)).toBe(10n ** 18n);
    expect(await result("anvil_setBalance", [WHALE, "0x2"])).toBeNull();
    expect(await balanceOf(WHALE)).toBe(2n);
    expect(await result("hardhat_setNonce", [WHALE, "0x2a"])).toBe(true);
    expect(await result("eth_getTransactionCount", [WHALE, "latest"])).toBe("0x2a");
    // Runtime code that returns storage slot 5: PUSH1 5 SLOAD PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN
    const code = "0x600554600052602060" + "00f3";
    expect(await result("hardhat_setCode", [OTHER, code])).toBe(true);
    expect(await result("eth_getCode", [OTHER, "latest"])).toBe(code);
    // viem sends a 32-byte slot; Hardhat's helpers a QUANTITY.
    const slot = `0x${"5".padStart(64, "0")}`;
    const value = `0x${"ab".padStart(64, "0")}`;
    expect(await result("hardhat_setStorageAt", [OTHER, "0x5", value])).toBe(true);
    expect(await result("eth_getStorageAt", [OTHER, slot, "latest"])).toBe(value);
    expect(await result("eth_call", [{ to: OTHER }, "latest"])).toBe(value);
    const after = await head();
    expect(after.number).toBe(before.number);
    // The header keeps the root it was made with; the proof of an edited account is of the
    // edited state.
    expect(after.stateRoot).toBe(before.stateRoot);
  });

  it("the next block builds on the edited state, and a snapshot taken before puts it back", async () => {
    const id = (await result("evm_snapshot")) as string;
    await result("hardhat_setBalance", [WHALE, "0x64"]);
    await (await wallet.sendTransaction({ to: WHALE, value: 1n })).wait();
    expect(await balanceOf(WHALE)).toBe(101n);
    expect(await result("evm_revert", [id])).toBe(true);
    expect(await balanceOf(WHALE)).toBe(2n);
  });

  it("refuses bad arguments with -32602 and what was wrong", async () => {
    expect((await failure("hardhat_setBalance", ["0x12", "0x1"])).code).toBe(-32602);
    const word = await failure("hardhat_setStorageAt", [OTHER, "0x1", `0x${"00".repeat(33)}`]);
    expect(word.code).toBe(-32602);
    expect(word.message).toMatch(/at most 32 bytes/);
    expect((await failure("hardhat_setStorageAt", [OTHER, "slot", "0x01"])).code).toBe(-32602);
  });
});

describe("impersonation", () => {
  it("eth_sendTransaction from an impersonated account, then refused once it stops", async () => {
    await result("hardhat_setBalance", [WHALE, "0xde0b6b3a7640000"]);
    const refused = await failure("eth_sendTransaction", [
      { from: WHALE, to: OTHER, value: "0x1" },
    ]);
    expect(refused.message).toMatch(/unknown account|not impersonated/);
    expect(await result("hardhat_impersonateAccount", [WHALE])).toBe(true);
    const nonce = BigInt((await result("eth_getTransactionCount", [WHALE, "latest"])) as string);
    const hash = (await result("eth_sendTransaction", [
      { from: WHALE, to: OTHER, value: "0x7" },
    ])) as string;
    const tx = (await result("eth_getTransactionByHash", [hash])) as {
      from: string;
      nonce: string;
    };
    expect(tx.from).toBe(WHALE);
    expect(BigInt(tx.nonce)).toBe(nonce);
    const receipt = (await result("eth_getTransactionReceipt", [hash])) as {
      status: string;
      from: string;
    };
    expect(receipt.status).toBe("0x1");
    expect(receipt.from).toBe(WHALE);
    expect(await balanceOf(OTHER)).toBe(7n);
    expect(await result("hardhat_stopImpersonatingAccount", [WHALE])).toBe(true);
    expect(await result("hardhat_stopImpersonatingAccount", [WHALE])).toBe(false);
    await failure("eth_sendTransaction", [{ from: WHALE, to: OTHER, value: "0x1" }]);
  });

  it("eth_sendUnsignedTransaction from any account, as Anvil takes it", async () => {
    const lone = "0x00000000000000000000000000000000000bee77";
    await result("anvil_setBalance", [lone, "0x100000000000"]);
    const hash = await result("eth_sendUnsignedTransaction", [
      { from: lone, to: OTHER, value: "0x3" },
    ]);
    const receipt = (await result("eth_getTransactionReceipt", [hash])) as { from: string };
    expect(receipt.from).toBe(lone);
    // eth_sendTransaction from it needs impersonation, or anvil_autoImpersonateAccount.
    await failure("eth_sendTransaction", [{ from: lone, to: OTHER, value: "0x1" }]);
    expect(await result("anvil_autoImpersonateAccount", [true])).toBeNull();
    await result("eth_sendTransaction", [{ from: lone, to: OTHER, value: "0x1" }]);
    await result("anvil_autoImpersonateAccount", [false]);
    await failure("eth_sendTransaction", [{ from: lone, to: OTHER, value: "0x1" }]);
  });
});

describe("mining controls", () => {
  it("hardhat_mine makes N blocks, interval seconds apart; evm_mine takes {blocks}", async () => {
    const start = await head();
    expect(await result("hardhat_mine", ["0x5", "0x3c"])).toBe(true);
    const end = await head();
    expect(BigInt(end.number) - BigInt(start.number)).toBe(5n);
    const fourth = (await result("eth_getBlockByNumber", [
      `0x${(BigInt(end.number) - 1n).toString(16)}`,
      false,
    ])) as { timestamp: string };
    expect(BigInt(end.timestamp) - BigInt(fourth.timestamp)).toBe(60n);
    await result("evm_mine", [{ blocks: 3 }]);
    expect(BigInt((await head()).number) - BigInt(end.number)).toBe(3n);
    expect(await result("anvil_mine")).toBeNull();
    // viem's test client sends an interval of 0: the default spacing.
    const before = BigInt((await head()).number);
    expect(await result("anvil_mine", ["0x2", "0x0"])).toBeNull();
    expect(BigInt((await head()).number)).toBe(before + 2n);
    expect((await failure("hardhat_mine", ["0x0"])).code).toBe(-32602);
  });

  it("evm_setNextBlockTimestamp sets the next block's time once; the clock goes on from it", async () => {
    const now = BigInt((await head()).timestamp);
    const next = now + 10_000n;
    expect(await result("evm_setNextBlockTimestamp", [Number(next)])).toBe(next.toString());
    await result("evm_mine");
    expect(BigInt((await head()).timestamp)).toBe(next);
    await result("evm_mine");
    const after = BigInt((await head()).timestamp);
    expect(after).toBeGreaterThan(next);
    expect(after - next).toBeLessThan(100n);
    expect((await failure("evm_setNextBlockTimestamp", [Number(next)])).code).toBe(-32602);
  });

  it("calls run at the node's clock: after evm_increaseTime, block.timestamp is in the future", async () => {
    // Runtime code that returns TIMESTAMP.
    const clock = "0x00000000000000000000000000000000000c10c4";
    await result("hardhat_setCode", [clock, "0x4260005260206000f3"]);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const offset = BigInt((await result("evm_increaseTime", [0])) as string);
    await result("evm_increaseTime", [86_400]);
    const seen = BigInt((await result("eth_call", [{ to: clock }, "latest"])) as string);
    expect(seen).toBeGreaterThanOrEqual(now + offset + 86_400n);
    const next = BigInt((await head()).timestamp) + 1_000_000n;
    await result("evm_setNextBlockTimestamp", [Number(next)]);
    expect(BigInt((await result("eth_call", [{ to: clock }, "latest"])) as string)).toBe(next);
    await result("evm_mine");
    expect(BigInt((await head()).timestamp)).toBe(next);
  });

  it("evm_setAutomine off keeps transactions waiting; hardhat_dropTransaction drops one", async () => {
    expect(await result("hardhat_getAutomine")).toBe(true);
    expect(await result("evm_setAutomine", [false])).toBe(true);
    expect(await result("anvil_getAutomine")).toBe(false);
    const start = (await head()).number;
    const a = await wallet.sendTransaction({ to: OTHER, value: 1n });
    expect((await head()).number).toBe(start);
    expect(await result("hardhat_dropTransaction", [a.hash])).toBe(true);
    expect(await result("hardhat_dropTransaction", [a.hash])).toBe(false);
    expect(await result("eth_getTransactionByHash", [a.hash])).toBeNull();
    const b = await wallet.sendTransaction({ to: OTHER, value: 1n, nonce: a.nonce });
    await result("evm_mine");
    expect((await provider.getTransactionReceipt(b.hash))?.status).toBe(1);
    const mined = await failure("hardhat_dropTransaction", [b.hash]);
    expect(mined.message).toMatch(/already in a block/);
    expect(await result("evm_setAutomine", [true])).toBe(true);
  });

  it("evm_setBlockGasLimit and hardhat_setCoinbase shape the next blocks", async () => {
    expect(await result("evm_setBlockGasLimit", ["0x17d7840"])).toBe(true);
    expect(await result("hardhat_setCoinbase", [WHALE])).toBe(true);
    await result("evm_mine");
    const block = await head();
    expect(BigInt(block.gasLimit)).toBe(25_000_000n);
    expect(block.miner).toBe(WHALE);
    expect((await failure("evm_setBlockGasLimit", ["0x1"])).code).toBe(-32602);
  });

  it("evm_setIntervalMining mines on its own, and 0 stops it", async () => {
    await result("evm_setAutomine", [false]);
    expect(await result("evm_setIntervalMining", [200])).toBe(true);
    const start = BigInt((await head()).number);
    const tx = await wallet.sendTransaction({ to: OTHER, value: 1n });
    expect((await tx.wait())?.status).toBe(1);
    expect(BigInt((await head()).number)).toBeGreaterThan(start);
    expect(await result("evm_setIntervalMining", [0])).toBe(true);
    await result("evm_setAutomine", [true]);
  });
});

describe("the block gas limit of a development network", () => {
  it("is 30,000,000 from the first block: a send with hardhat-ethers' fixed 16,777,216 gas is taken", async () => {
    const fresh = await startNode();
    try {
      const res = await call(fresh.url, "eth_sendTransaction", [
        { from: DEV0, to: OTHER, value: "0x1", gas: "0x1000000" },
      ]);
      expect(res.error).toBeUndefined();
      const block = (await call(fresh.url, "eth_getBlockByNumber", ["0x1", false])).result as {
        gasLimit: string;
      };
      expect(BigInt(block.gasLimit)).toBe(30_000_000n);
      // The genesis keeps the network's own.
      const genesis = (await call(fresh.url, "eth_getBlockByNumber", ["0x0", false])).result as {
        gasLimit: string;
      };
      expect(BigInt(genesis.gasLimit)).toBe(10_000_000n);
    } finally {
      await fresh.stop();
    }
  });

  it("--block-gas-limit sets it; above it a send is refused; on a public network the flag is", async () => {
    const small = await startNode({ args: ["--block-gas-limit", "12000000"] });
    try {
      const refused = await call(small.url, "eth_sendTransaction", [
        { from: DEV0, to: OTHER, value: "0x1", gas: "0x1000000" },
      ]);
      expect(refused.error?.message).toMatch(/block gas limit 12000000/);
      await call(small.url, "evm_mine", []);
      const block = (await call(small.url, "eth_getBlockByNumber", ["latest", false])).result as {
        gasLimit: string;
      };
      expect(BigInt(block.gasLimit)).toBe(12_000_000n);
    } finally {
      await small.stop();
    }
    const testnet = await runCli(["--testnet", "--block-gas-limit", "12000000"]);
    expect(testnet.code).not.toBe(0);
    expect(testnet.stderr).toMatch(/--block-gas-limit works on regtest and devnet only/);
  });
});

describe("metadata", () => {
  it("hardhat_metadata and anvil_nodeInfo describe the node and its head", async () => {
    const meta = (await result("hardhat_metadata")) as Record<string, unknown>;
    const latest = await head();
    expect(meta.chainId).toBe(33);
    expect(meta.clientVersion).toBe("HardhatNetwork/2.22.0/nodex");
    expect(meta.latestBlockNumber).toBe(Number(latest.number));
    expect(meta.instanceId).toMatch(/^0x[0-9a-f]{64}$/);
    const info = (await result("anvil_nodeInfo")) as Record<string, unknown>;
    expect(info.currentBlockNumber).toBe(latest.number);
  });
});

describe("hardhat_reset", () => {
  it("goes back to genesis; forking parameters are refused", async () => {
    expect(
      (await failure("hardhat_reset", [{ forking: { jsonRpcUrl: "http://127.0.0.1:1" } }])).code,
    ).toBe(-32602);
    expect(await result("hardhat_reset")).toBe(true);
    expect((await head()).number).toBe("0x0");
    expect(await balanceOf(WHALE)).toBe(0n);
    expect(await result("eth_getCode", [OTHER, "latest"])).toBe("0x");
    expect(await balanceOf(DEV0)).toBeGreaterThan(0n);
  });
});

describe("on a public network", () => {
  it("--client-version is refused, and the helpers answer that blocks come from merged miners", async () => {
    const refused = await runCli(["--testnet", "--client-version", "HardhatNetwork/x"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--client-version works on regtest and devnet only/);
    const testnet = await startNode({
      network: "--testnet",
      args: ["--rpc-modules", "eth,hardhat"],
    });
    try {
      const res = await call(testnet.url, "hardhat_setBalance", [WHALE, "0x1"]);
      expect(res.error?.code).toBe(-32000);
      expect(res.error?.message).toMatch(/regtest and devnet/);
    } finally {
      await testnet.stop();
    }
  });
});
