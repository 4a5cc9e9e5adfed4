// viem (public, wallet and test clients), ethers v6 and web3.js v4 with their defaults, over
// HTTP and WebSocket, against nodex --regtest: what apps/node/test/e2e does not cover already
// (contracts deployed from the node's accounts, events read back and heard over a socket, fee
// estimates, revert reasons, viem's test client in both of its modes).
import {
  ContractFactory,
  type Contract as EthersContract,
  JsonRpcProvider,
  WebSocketProvider,
} from "ethers";
import {
  type BaseError,
  ContractFunctionExecutionError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  decodeErrorResult,
  defineChain,
  getContract,
  http,
  type PublicClient,
  parseEther,
  RpcRequestError,
  type WebSocketTransport,
  webSocket,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3, WebSocketProvider as Web3WebSocketProvider } from "web3";
import { DEV_ACCOUNT, DEV_ACCOUNT_2, type Nodex, startNodex } from "./helpers/nodex.js";
import { compile } from "./helpers/solidity.js";

const COUNTER = compile("Counter.sol", "Counter");
const COUNTER_ABI = [
  {
    type: "function",
    name: "count",
    stateMutability: "view",
    inputs: [],
    outputs: [{ name: "", type: "uint256" }],
  },
  {
    type: "function",
    name: "set",
    stateMutability: "nonpayable",
    inputs: [{ name: "value", type: "uint256" }],
    outputs: [],
  },
  {
    type: "function",
    name: "increment",
    stateMutability: "nonpayable",
    inputs: [],
    outputs: [],
  },
  {
    type: "event",
    name: "Counted",
    inputs: [
      { name: "by", type: "address", indexed: true },
      { name: "count", type: "uint256", indexed: false },
    ],
  },
] as const;

let node: Nodex;
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  node = await startNodex();
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await node?.stop();
});

/** The first value `subscribe` hands to its callback. */
function first<T>(subscribe: (hear: (value: T) => void) => unknown): Promise<T> {
  return new Promise((resolve) => {
    subscribe(resolve);
  });
}

function chain() {
  return defineChain({
    id: 33,
    name: "Nodex regtest",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [node.url], webSocket: [node.wsUrl] } },
  });
}

describe("viem", () => {
  it("wallet client: deploys from a node account, writes, reads and finds the event", async () => {
    const publicClient = createPublicClient({ chain: chain(), transport: http(node.url) });
    const wallet = createWalletClient({
      account: DEV_ACCOUNT,
      chain: chain(),
      transport: http(node.url),
    });
    const deployHash = await wallet.deployContract({
      abi: COUNTER_ABI,
      bytecode: COUNTER.bytecode,
    });
    const deployed = await publicClient.waitForTransactionReceipt({ hash: deployHash });
    expect(deployed.status).toBe("success");
    const counter = getContract({
      address: deployed.contractAddress!,
      abi: COUNTER_ABI,
      client: { public: publicClient, wallet },
    });
    const hash = await counter.write.set([11n]);
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    // A send from the node's account that names no type is legacy here (see docs/rpc.md).
    expect(receipt.type).toBe("legacy");
    expect(await counter.read.count()).toBe(11n);
    const events = await publicClient.getContractEvents({
      address: counter.address,
      abi: COUNTER_ABI,
      eventName: "Counted",
      fromBlock: 0n,
    });
    expect(events.map((e) => e.args)).toEqual([{ by: DEV_ACCOUNT, count: 11n }]);
  });

  // eth_call answers a revert with -32015 (the service's rule, as the reference node), which viem
  // does not read as a revert (it looks for 3 or -32603): the reason is in the error's details,
  // the revert data on its cause, for decodeErrorResult.
  it("simulateContract of a revert: the reason in the error, the data decodable", async () => {
    const publicClient = createPublicClient({ chain: chain(), transport: http(node.url) });
    const wallet = createWalletClient({
      account: DEV_ACCOUNT,
      chain: chain(),
      transport: http(node.url),
    });
    const { contractAddress } = await publicClient.waitForTransactionReceipt({
      // The gas given: this case is about the revert, the first one about a send without it.
      hash: await wallet.deployContract({
        abi: COUNTER_ABI,
        bytecode: COUNTER.bytecode,
        gas: 500_000n,
      }),
    });
    const error = await publicClient
      .simulateContract({
        account: DEV_ACCOUNT,
        address: contractAddress!,
        abi: COUNTER_ABI,
        functionName: "set",
        args: [5000n],
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(error).toBeInstanceOf(ContractFunctionExecutionError);
    expect((error as BaseError).details).toBe(
      "VM Exception while processing transaction: revert Counter: too big",
    );
    const raw = (error as BaseError).walk((e) => e instanceof RpcRequestError) as RpcRequestError;
    expect(raw.code).toBe(-32015);
    const decoded = decodeErrorResult({
      abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }],
      data: raw.data as `0x${string}`,
    });
    expect(decoded.args).toEqual(["Counter: too big"]);
  });

  it("estimateFeesPerGas answers EIP-1559 fees from the node's tip and base fee", async () => {
    const publicClient = createPublicClient({ chain: chain(), transport: http(node.url) });
    const fees = await publicClient.estimateFeesPerGas();
    const tip = BigInt(
      (await publicClient.request({ method: "eth_maxPriorityFeePerGas" })) as string,
    );
    expect(fees.maxPriorityFeePerGas).toBe(tip);
    // No base fee on this chain (0x0 in blocks): viem's 1.2 × base fee + tip is the tip.
    expect(fees.maxFeePerGas).toBe(tip);
  });

  it("over WebSocket: sends, waits for the receipt and hears the block on watchBlockNumber", async () => {
    const transport = webSocket(node.wsUrl);
    const publicClient: PublicClient<WebSocketTransport> = createPublicClient({
      chain: chain(),
      transport,
    });
    const wallet = createWalletClient({ account: DEV_ACCOUNT, chain: chain(), transport });
    let unwatch: () => void = () => {};
    const heard = first<bigint>((hear) => {
      // Over a WebSocket viem subscribes (eth_subscribe newHeads) rather than polls.
      unwatch = publicClient.watchBlockNumber({ onBlockNumber: hear });
    });
    closers.push(() => unwatch());
    // Let the subscription be set up before the block comes.
    await publicClient.getBlockNumber({ cacheTime: 0 });
    const hash = await wallet.sendTransaction({ to: DEV_ACCOUNT_2, value: 1n });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(await heard).toBeGreaterThanOrEqual(receipt.blockNumber - 1n);
    unwatch();
  });
});

// viem's test client picks its methods' prefix by mode (anvil_… or hardhat_…); evm_snapshot,
// evm_revert, evm_increaseTime, evm_setAutomine and evm_setNextBlockTimestamp it sends in both.
describe.each(["anvil", "hardhat"] as const)("viem test client, mode %s", (mode) => {
  const stranger =
    mode === "anvil"
      ? "0x00000000000000000000000000000000000a0001"
      : "0x00000000000000000000000000000000000a0002";

  function clients() {
    const transport = http(node.url);
    return {
      test: createTestClient({ chain: chain(), mode, transport }),
      publicClient: createPublicClient({ chain: chain(), transport }),
    };
  }

  it("snapshot and revert (evm_)", async () => {
    const { test, publicClient } = clients();
    const wallet = createWalletClient({
      account: DEV_ACCOUNT,
      chain: chain(),
      transport: http(node.url),
    });
    const id = await test.snapshot();
    const before = await publicClient.getBlockNumber({ cacheTime: 0 });
    await publicClient.waitForTransactionReceipt({
      hash: await wallet.sendTransaction({ to: stranger, value: 5n }),
    });
    expect(await publicClient.getBalance({ address: stranger })).toBe(5n);
    await test.revert({ id });
    expect(await publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before);
    expect(await publicClient.getBalance({ address: stranger })).toBe(0n);
  });

  it("increaseTime and setNextBlockTimestamp (evm_)", async () => {
    const { test, publicClient } = clients();
    const latest = await publicClient.getBlock();
    // evm_mine rather than test.mine (${mode}_mine): this case is about time alone.
    await test.setNextBlockTimestamp({ timestamp: latest.timestamp + 1000n });
    await test.request({ method: "evm_mine", params: undefined });
    expect((await publicClient.getBlock()).timestamp).toBe(latest.timestamp + 1000n);
    await test.increaseTime({ seconds: 3600 });
    await test.request({ method: "evm_mine", params: undefined });
    expect((await publicClient.getBlock()).timestamp).toBeGreaterThanOrEqual(
      latest.timestamp + 4600n,
    );
  });

  it(`mine (${mode}_mine)`, async () => {
    const { test, publicClient } = clients();
    const before = await publicClient.getBlockNumber({ cacheTime: 0 });
    await test.mine({ blocks: 3 });
    expect(await publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before + 3n);
  });

  it(`setBalance, setCode, setStorageAt, setNonce (${mode}_…)`, async () => {
    const { test, publicClient } = clients();
    await test.setBalance({ address: stranger, value: parseEther("3") });
    expect(await publicClient.getBalance({ address: stranger })).toBe(parseEther("3"));
    await test.setCode({ address: stranger, bytecode: "0x602a60005260206000f3" });
    expect(await publicClient.getCode({ address: stranger })).toBe("0x602a60005260206000f3");
    const word = `0x${"07".padStart(64, "0")}` as const;
    await test.setStorageAt({ address: stranger, index: 1, value: word });
    expect(await publicClient.getStorageAt({ address: stranger, slot: "0x1" })).toBe(word);
    await test.setNonce({ address: stranger, nonce: 9 });
    expect(await publicClient.getTransactionCount({ address: stranger })).toBe(9);
  });

  it(`impersonateAccount sends from an address without its key (${mode}_…)`, async () => {
    const { test, publicClient } = clients();
    const who =
      mode === "anvil"
        ? "0x00000000000000000000000000000000000b0001"
        : "0x00000000000000000000000000000000000b0002";
    await test.setBalance({ address: who, value: parseEther("1") });
    await test.impersonateAccount({ address: who });
    const wallet = createWalletClient({ account: who, chain: chain(), transport: http(node.url) });
    const hash = await wallet.sendTransaction({ to: DEV_ACCOUNT_2, value: 1n });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.from).toBe(who);
    await test.stopImpersonatingAccount({ address: who });
  });

  it("setAutomine(false) holds transactions until mine (evm_setAutomine)", async () => {
    const { test, publicClient } = clients();
    const wallet = createWalletClient({
      account: DEV_ACCOUNT,
      chain: chain(),
      transport: http(node.url),
    });
    await test.setAutomine(false);
    try {
      const before = await publicClient.getBlockNumber({ cacheTime: 0 });
      const hash = await wallet.sendTransaction({ to: DEV_ACCOUNT_2, value: 1n });
      expect(await publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before);
      await test.request({ method: "evm_mine", params: undefined });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      expect(receipt.blockNumber).toBe(before + 1n);
    } finally {
      await test.setAutomine(true);
    }
  });
});

describe("ethers v6", () => {
  it("HTTP: the node's signer deploys, calls, finds events; a revert's reason; fee data", async () => {
    const provider = new JsonRpcProvider(node.url);
    closers.push(() => provider.destroy());
    const signer = await provider.getSigner(DEV_ACCOUNT);
    const factory = new ContractFactory(COUNTER_ABI, COUNTER.bytecode, signer);
    const counter = (await (await factory.deploy()).waitForDeployment()) as EthersContract;
    const receipt = await (await counter.getFunction("set")(21n)).wait();
    expect(receipt?.status).toBe(1);
    expect(await counter.getFunction("count")()).toBe(21n);
    const events = await counter.queryFilter(counter.filters.Counted!(DEV_ACCOUNT));
    expect(events.map((e) => (e as unknown as { args: unknown[] }).args.slice())).toEqual([
      [DEV_ACCOUNT, 21n],
    ]);
    await expect(counter.getFunction("set").estimateGas(5000n)).rejects.toMatchObject({
      code: "CALL_EXCEPTION",
      reason: "Counter: too big",
    });
    const fees = await provider.getFeeData();
    expect(fees.gasPrice).toBe(BigInt(await provider.send("eth_gasPrice", [])));
  });

  it("WebSocket: the node's signer sends over the socket and contract.on hears the event", async () => {
    const provider = new WebSocketProvider(node.wsUrl);
    closers.push(() => provider.destroy());
    const signer = await provider.getSigner(DEV_ACCOUNT);
    const factory = new ContractFactory(COUNTER_ABI, COUNTER.bytecode, signer);
    const counter = (await (await factory.deploy()).waitForDeployment()) as EthersContract;
    const heard = first<[string, bigint]>((hear) => {
      void counter.on("Counted", (by: string, count: bigint) => hear([by, count]));
    });
    // contract.on subscribes asynchronously: wait until the subscription is in place.
    while ((await counter.listenerCount("Counted")) === 0) await provider.getBlockNumber();
    await provider.send("eth_blockNumber", []);
    const tx = await counter.getFunction("increment")();
    expect((await tx.wait())?.status).toBe(1);
    expect(await heard).toEqual([DEV_ACCOUNT, 1n]);
    await counter.removeAllListeners();
    expect((await provider.getFeeData()).gasPrice).toBe(
      BigInt(await provider.send("eth_gasPrice", [])),
    );
  });
});

describe("web3.js v4", () => {
  it("HTTP: deploys from a node account, sends, calls, reads past events, a revert's reason", async () => {
    const web3 = new Web3(node.url);
    const deployed = await new web3.eth.Contract(COUNTER_ABI)
      .deploy({ data: COUNTER.bytecode })
      .send({ from: DEV_ACCOUNT });
    expect(deployed.options.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const receipt = await deployed.methods.set(33n).send({ from: DEV_ACCOUNT });
    expect(receipt.status).toBe(1n);
    expect(await deployed.methods.count().call()).toBe(33n);
    const events = await deployed.getPastEvents("Counted", { fromBlock: 0 });
    expect(events).toHaveLength(1);
    const [event] = events as unknown as { returnValues: { by: string; count: bigint } }[];
    expect(event!.returnValues.by).toBe(DEV_ACCOUNT);
    expect(event!.returnValues.count).toBe(33n);
    await expect(deployed.methods.set(5000n).call({ from: DEV_ACCOUNT })).rejects.toMatchObject({
      cause: expect.objectContaining({ message: expect.stringContaining("Counter: too big") }),
    });
    const fees = await web3.eth.calculateFeeData();
    expect(fees.gasPrice).toBe(await web3.eth.getGasPrice());
  });

  it("WebSocket: deploys over the socket and contract.events hears the event", async () => {
    const provider = new Web3WebSocketProvider(node.wsUrl);
    closers.push(() => provider.disconnect());
    const web3 = new Web3(provider);
    const deployed = await new web3.eth.Contract(COUNTER_ABI)
      .deploy({ data: COUNTER.bytecode })
      .send({ from: DEV_ACCOUNT });
    const subscription = deployed.events.Counted!();
    const heard = first<{ returnValues: { by: string; count: bigint } }>((hear) =>
      subscription.on("data", hear as never),
    );
    await first((hear) => subscription.on("connected", hear));
    await deployed.methods.increment().send({ from: DEV_ACCOUNT });
    const event = await heard;
    expect(event.returnValues.by).toBe(DEV_ACCOUNT);
    expect(event.returnValues.count).toBe(1n);
    await subscription.unsubscribe();
  });
});
