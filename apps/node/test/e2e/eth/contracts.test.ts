import {
  AbiCoder,
  Contract,
  ContractFactory,
  Interface,
  JsonRpcProvider,
  keccak256,
  Wallet,
} from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { type Compiled, compile } from "../helpers/solidity.js";

// Solidity contracts compiled for Cancun, deployed and used through ethers.
const KEY5 = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const KEY6 = "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e";

let node: RunningNode;
let provider: JsonRpcProvider;
let owner: Wallet;
let other: Wallet;
let token: Contract;
let lab: Contract;
let labArtifact: Compiled;

beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  owner = new Wallet(KEY5, provider);
  other = new Wallet(KEY6, provider);
  const { Token } = compile("Token.sol");
  const artifacts = compile("Lab.sol");
  labArtifact = artifacts.Lab!;
  token = (await (
    await new ContractFactory(Token!.abi, Token!.bytecode, owner).deploy(1_000_000n)
  ).waitForDeployment()) as Contract;
  lab = (await (
    await new ContractFactory(labArtifact.abi, labArtifact.bytecode, owner).deploy()
  ).waitForDeployment()) as Contract;
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

describe("an ERC-20", () => {
  it("has its supply with the deployer, readable with eth_call", async () => {
    expect(await token.getFunction("totalSupply")()).toBe(1_000_000n);
    expect(await token.getFunction("balanceOf")(owner.address)).toBe(1_000_000n);
    expect(await token.getFunction("symbol")()).toBe("TT");
  });

  it("exposes its storage: a plain slot and a mapping element, in every position form", async () => {
    const address = await token.getAddress();
    const supply = `0x${(1_000_000).toString(16).padStart(64, "0")}`;
    expect(await provider.getStorage(address, 3)).toBe(supply);
    const byData = await call(node.url, "eth_getStorageAt", [
      address,
      `0x${"3".padStart(64, "0")}`,
      "latest",
    ]);
    expect(byData.result).toBe(supply);
    // balanceOf lives in slot 4: the element for `owner` is at keccak256(pad(owner) ++ pad(4))
    const slot = keccak256(
      AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [owner.address, 4n]),
    );
    const balance = BigInt(await provider.getStorage(address, slot));
    expect(balance).toBe(await token.getFunction("balanceOf")(owner.address));
    expect(await provider.getStorage(address, 99)).toBe(`0x${"00".repeat(32)}`);
    const bad = await call(node.url, "eth_getStorageAt", [address, "0x03", "latest"]);
    expect(bad.error).toEqual({
      code: -32602,
      message: "invalid argument 1: hex string has leading zero digits",
    });
  });

  it("transfers, with a Transfer log in the receipt and in eth_getLogs", async () => {
    const tx = await token.getFunction("transfer")(other.address, 250n);
    const receipt = await tx.wait();
    expect(receipt.status).toBe(1);
    const parsed = token.interface.parseLog(receipt.logs[0]);
    expect(parsed?.name).toBe("Transfer");
    expect(parsed?.args.toArray()).toEqual([owner.address, other.address, 250n]);
    expect(await token.getFunction("balanceOf")(other.address)).toBe(250n);
    const logs = await token.queryFilter(token.filters.Transfer!(null, other.address), 0, "latest");
    expect(logs).toHaveLength(1);
    expect(logs[0]?.transactionHash).toBe(receipt.hash);
  });

  it("reverts an overdraft with the reason, in eth_call and in estimateGas", async () => {
    const poorToken = token.connect(other) as Contract;
    await expect(
      poorToken.getFunction("transfer").staticCall(owner.address, 10_000n),
    ).rejects.toMatchObject({
      reason: "ERC20: transfer amount exceeds balance",
    });
    const data = token.interface.encodeFunctionData("transfer", [owner.address, 10_000n]);
    const res = await call(node.url, "eth_call", [
      { from: other.address, to: await token.getAddress(), data },
      "latest",
    ]);
    expect(res.error?.code).toBe(-32015);
    expect(res.error?.message).toBe(
      "VM Exception while processing transaction: revert ERC20: transfer amount exceeds balance",
    );
    // eth_estimateGas answers the same failure, with the Error(string) data, before any send.
    const estimate = await call(node.url, "eth_estimateGas", [
      { from: other.address, to: await token.getAddress(), data },
    ]);
    expect(estimate.error).toEqual({
      code: -32015,
      message: res.error?.message,
      data: token.interface.encodeErrorResult("Error", ["ERC20: transfer amount exceeds balance"]),
    });
    expect(estimate.result).toBeUndefined();
    // ethers estimates before it sends: the send is refused with the reason, nothing is mined.
    const before = await provider.getBlockNumber();
    await expect(poorToken.getFunction("transfer")(owner.address, 10_000n)).rejects.toMatchObject({
      code: "CALL_EXCEPTION",
      reason: "ERC20: transfer amount exceeds balance",
    });
    expect(await provider.getBlockNumber()).toBe(before);
  });

  it("estimates a call whose sender lacks the value it sends (the spec's estimate, not an error)", async () => {
    const poor = Wallet.createRandom();
    const out = await call(node.url, "eth_estimateGas", [
      { from: poor.address, to: other.address, value: "0xde0b6b3a7640000" },
    ]);
    expect(out.error).toBeUndefined();
    // 21,000, and 80 for the one byte of an empty access list: the request does not say it is
    // legacy, and regtest takes typed transactions (RSKIP546).
    expect(out.result).toBe("0x5258");
    const legacy = await call(node.url, "eth_estimateGas", [
      { from: poor.address, to: other.address, value: "0xde0b6b3a7640000", type: "0x0" },
    ]);
    expect(legacy.result).toBe("0x5208");
  });
});

describe("a contract that emits, reverts, panics and creates", () => {
  it("emits indexed events found by topic", async () => {
    const receipt = await (await lab.getFunction("note")(7n, "hello")).wait();
    const parsed = lab.interface.parseLog(receipt.logs[0]);
    expect(parsed?.args.toArray()).toEqual([7n, owner.address, "hello"]);
    const found = await lab.queryFilter(lab.filters.Noted!(7n), 0, "latest");
    expect(found).toHaveLength(1);
  });

  it.each([
    ["fail", ["no way"], "VM Exception while processing transaction: revert no way"],
    [
      "divide",
      [1n, 0n],
      "VM Exception while processing transaction: revert panic: division or modulo by zero (0x12)",
    ],
    [
      "at",
      [3n],
      "VM Exception while processing transaction: revert panic: array index out of bounds (0x32)",
    ],
    ["failCustom", [], "VM Exception while processing transaction: transaction reverted"],
  ])("answers %s with -32015, in eth_call and eth_estimateGas alike", async (fn, args, message) => {
    const data = lab.interface.encodeFunctionData(fn, args);
    const res = await call(node.url, "eth_call", [{ to: await lab.getAddress(), data }, "latest"]);
    expect(res.error?.code).toBe(-32015);
    expect(res.error?.message).toBe(message);
    expect((res.error as { data?: string }).data).toMatch(/^0x[0-9a-f]{8,}$/);
    const estimate = await call(node.url, "eth_estimateGas", [
      { to: await lab.getAddress(), data },
    ]);
    expect(estimate.error).toEqual(res.error);
  });

  it("decodes a custom error from the revert data", async () => {
    const data = lab.interface.encodeFunctionData("failCustom", []);
    const res = await call(node.url, "eth_call", [{ to: await lab.getAddress(), data }, "latest"]);
    const decoded = new Interface(labArtifact.abi as never[]).parseError(
      (res.error as { data: string }).data,
    );
    expect(decoded?.name).toBe("Custom");
    expect(decoded?.args.toArray()).toEqual([42n]);
  });

  it("creates another contract", async () => {
    const receipt = await (await lab.getFunction("create")(99n)).wait();
    const created = lab.interface.parseLog(receipt.logs[0])?.args[0] as string;
    expect(await provider.getCode(created)).not.toBe("0x");
    const child = new Contract(created, ["function value() view returns (uint256)"], provider);
    expect(await child.getFunction("value")()).toBe(99n);
  });

  it("uses transient storage (Cancun)", async () => {
    expect(await lab.getFunction("transient").staticCall(5n)).toBe(5n);
  });

  it("estimates enough gas for heavy work, and the estimate succeeds as the gas limit", async () => {
    const estimate = await lab.getFunction("fill").estimateGas(40n);
    expect(estimate).toBeGreaterThan(40n * 20_000n);
    const receipt = await (await lab.getFunction("fill")(40n, { gasLimit: estimate })).wait();
    expect(receipt.status).toBe(1);
    expect(receipt.gasUsed).toBeLessThanOrEqual(estimate);
  });

  it("mines a reverting transaction sent with explicit gas, answering the revert as the reference node does", async () => {
    const signed = await owner.signTransaction({
      to: await lab.getAddress(),
      data: lab.interface.encodeFunctionData("fail", ["sent anyway"]),
      gasLimit: 100_000n,
      gasPrice: 0n,
      nonce: await provider.getTransactionCount(owner.address),
      chainId: 33,
      type: 0,
    });
    const sent = await call(node.url, "eth_sendRawTransaction", [signed]);
    // Automined: in a block with status 0, and the sender told why (-32015, reason and data).
    expect(sent.error).toEqual({
      code: -32015,
      message: "VM Exception while processing transaction: revert sent anyway",
      data: lab.interface.encodeErrorResult("Error", ["sent anyway"]),
    });
    const receipt = await provider.getTransactionReceipt(keccak256(signed));
    expect(receipt?.status).toBe(0);
    expect(receipt?.logs).toEqual([]);
    expect(receipt?.gasUsed).toBeLessThan(100_000n);
  });
});
