import { type Contract, ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// Contracts' console.log (Hardhat's console.sol) in the node's log: the lines of transactions
// with their hash, of eth_call, of a failing eth_estimateGas; on development networks only.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

interface Line {
  readonly level: string;
  readonly msg: string;
  readonly tx?: string;
  readonly message?: string;
  readonly note?: string;
}

const { Greeter } = compile("../dev/ConsoleLog.sol");

/** The node's console.log lines, in order. */
function consoleLines(node: RunningNode): Line[] {
  return node
    .logs()
    .split("\n")
    .filter((l) => l.includes('"msg":"console.log"'))
    .map((l) => JSON.parse(l) as Line)
    .map(({ level, msg, tx, message, note }) => ({
      level,
      msg,
      ...(tx === undefined ? {} : { tx }),
      ...(message === undefined ? {} : { message }),
      ...(note === undefined ? {} : { note }),
    }));
}

/** Waits until the node has logged `count` console.log lines (its log reaches us in chunks). */
async function linesAfter(node: RunningNode, count: number): Promise<Line[]> {
  for (let i = 0; i < 100 && consoleLines(node).length < count; i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  return consoleLines(node);
}

describe("console.log on regtest", () => {
  let node: RunningNode;
  let provider: JsonRpcProvider;
  let wallet: Wallet;
  let greeter: Contract;
  let address: string;
  let deployHash: string;

  beforeAll(async () => {
    node = await startNode();
    provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
    wallet = new Wallet(KEY0, provider);
    const factory = new ContractFactory(Greeter!.abi, Greeter!.bytecode, wallet);
    greeter = (await factory.deploy("hello")) as Contract;
    deployHash = greeter.deploymentTransaction()!.hash;
    await greeter.waitForDeployment();
    address = (await greeter.getAddress()).toLowerCase();
  }, 60_000);
  afterAll(async () => {
    provider?.destroy();
    await node?.stop();
  });

  it("prints a creation's lines with its transaction's hash", async () => {
    const lines = await linesAfter(node, 1);
    expect(lines).toEqual([
      {
        level: "info",
        msg: "console.log",
        tx: deployHash,
        message: `Deploying a Greeter with greeting: 7 ${address}`,
      },
    ]);
  });

  it("prints every line of a call's transaction once, and a note for what does not decode", async () => {
    const before = consoleLines(node).length;
    const sent = await greeter.getFunction("setGreeting")("bonjour");
    const receipt = await sent.wait();
    expect(receipt.status).toBe(1);
    const lines = (await linesAfter(node, before + 4)).slice(before);
    const from = wallet.address.toLowerCase();
    expect(lines).toEqual([
      {
        level: "info",
        msg: "console.log",
        tx: sent.hash,
        message: `Changing greeting, 3 times, by ${from}`,
      },
      { level: "info", msg: "console.log", tx: sent.hash, message: "-42" },
      { level: "info", msg: "console.log", tx: sent.hash, message: "0xabcdef" },
      {
        level: "warn",
        msg: "console.log",
        tx: sent.hash,
        note: expect.stringMatching(/^console\.log\(string\) call with malformed arguments/),
      },
    ]);
  });

  it("prints the lines of eth_call, and of eth_estimateGas only when it fails", async () => {
    let before = consoleLines(node).length;
    expect(await greeter.getFunction("greet")()).toBe("bonjour");
    expect((await linesAfter(node, before + 1)).slice(before)).toEqual([
      { level: "info", msg: "console.log", message: "bonjour" },
    ]);

    before = consoleLines(node).length;
    const data = greeter.interface.encodeFunctionData("greet");
    const estimate = await call(node.url, "eth_estimateGas", [{ to: address, data }]);
    expect(estimate.error).toBeUndefined();
    const failing = greeter.interface.encodeFunctionData("failing");
    const failed = await call(node.url, "eth_estimateGas", [{ to: address, data: failing }]);
    expect(failed.error).toMatchObject({ code: -32015 });
    expect((await linesAfter(node, before + 1)).slice(before)).toEqual([
      { level: "info", msg: "console.log", message: "true before the revert" },
    ]);
  });

  it("prints the lines of a transaction that reverts", async () => {
    const before = consoleLines(node).length;
    const data = greeter.interface.encodeFunctionData("failing");
    const sent = await call(node.url, "eth_sendTransaction", [
      { from: wallet.address, to: address, data, gas: "0x30000" },
    ]);
    expect(sent.error).toMatchObject({ code: -32015 });
    const lines = (await linesAfter(node, before + 1)).slice(before);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ message: "true before the revert" });
    expect(lines[0]!.tx).toMatch(/^0x[0-9a-f]{64}$/);
  });
  it("prints a transaction sent again after evm_revert again", async () => {
    const data = greeter.interface.encodeFunctionData("setGreeting", ["again"]);
    const nonce = await provider.getTransactionCount(wallet.address);
    const raw = await wallet.signTransaction({
      to: address,
      data,
      nonce,
      gasLimit: 300_000n,
      gasPrice: 10n ** 9n,
      chainId: 33n,
      type: 0,
    });
    const snapshot = await call(node.url, "evm_snapshot", []);
    let before = consoleLines(node).length;
    const first = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(first.error).toBeUndefined();
    const once = (await linesAfter(node, before + 4)).slice(before);
    expect(once.map((l) => l.tx)).toEqual(Array(4).fill(first.result));
    expect((await call(node.url, "evm_revert", [snapshot.result])).result).toBe(true);
    before = consoleLines(node).length;
    const second = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(second.result).toBe(first.result);
    const twice = (await linesAfter(node, before + 4)).slice(before);
    expect(twice).toEqual(once);
  });
});

describe("console.log on other networks", () => {
  it("prints nothing on testnet", async () => {
    const node = await startNode({ network: "--testnet" });
    try {
      // A creation run by eth_call: its constructor logs on regtest.
      const data = `${Greeter!.bytecode}${new ContractFactory(Greeter!.abi, Greeter!.bytecode).interface.encodeDeploy(["x"]).slice(2)}`;
      const res = await call(node.url, "eth_call", [{ data }, "latest"]);
      expect(res.error).toBeUndefined();
      expect(consoleLines(node)).toEqual([]);
      const regtest = await startNode();
      try {
        expect((await call(regtest.url, "eth_call", [{ data }, "latest"])).error).toBeUndefined();
        expect((await linesAfter(regtest, 1)).map((l) => l.message)).toEqual([
          expect.stringMatching(/^Deploying a Greeter with greeting: 7 0x/),
        ]);
      } finally {
        await regtest.stop();
      }
    } finally {
      await node.stop();
    }
  }, 60_000);
});
