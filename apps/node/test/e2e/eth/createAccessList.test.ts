import {
  AbiCoder,
  ContractFactory,
  JsonRpcProvider,
  keccak256,
  toBeHex,
  Wallet,
  zeroPadValue,
} from "ethers";
import { createPublicClient, defineChain, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// eth_createAccessList (cast access-list, viem's createAccessList): the slots and accounts a
// call touches, as geth lists them, and the gas a typed transaction carrying that list uses
// (RSKIP546: 80 gas a byte of the list's RLP), equal to the receipt's of that transaction.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const slot = (n: bigint) => zeroPadValue(toBeHex(n), 32);

interface AccessListResult {
  accessList: { address: string; storageKeys: string[] }[];
  gasUsed: string;
  error?: string;
}

let node: RunningNode;
let provider: JsonRpcProvider;
let wallet: Wallet;
let store: string;
let other: string;
let storeAbi: ContractFactory["interface"];

async function result<T>(method: string, params: unknown[]): Promise<T> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result as T;
}

beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  wallet = new Wallet(KEY0, provider);
  const { Store, Other } = compile("../eth/AccessList.sol");
  const o = await (
    await new ContractFactory(Other!.abi, Other!.bytecode, wallet).deploy()
  ).waitForDeployment();
  other = (await o.getAddress()).toLowerCase();
  const factory = new ContractFactory(Store!.abi, Store!.bytecode, wallet);
  const s = await (await factory.deploy(other)).waitForDeployment();
  store = (await s.getAddress()).toLowerCase();
  storeAbi = factory.interface;
}, 60_000);
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

describe("eth_createAccessList", () => {
  it("lists the slots of the recipient and the accounts it calls, sorted, and the gas of the transaction with that list", async () => {
    const data = storeAbi.encodeFunctionData("set", [7, 5]);
    const from = wallet.address.toLowerCase();
    const out = await result<AccessListResult>("eth_createAccessList", [{ from, to: store, data }]);
    const mapSlot = keccak256(AbiCoder.defaultAbiCoder().encode(["uint256", "uint256"], [7, 0]));
    const expected = [
      { address: store, storageKeys: [slot(1n), slot(2n), mapSlot].sort() },
      { address: other, storageKeys: [slot(0n)] },
    ].sort((a, b) => (a.address < b.address ? -1 : 1));
    expect(out.accessList).toEqual(expected);
    expect(out.error).toBeUndefined();

    // the same with latest named, and by viem
    expect(await result("eth_createAccessList", [{ from, to: store, data }, "latest"])).toEqual(
      out,
    );
    const chain = defineChain({
      id: 33,
      name: "regtest",
      nativeCurrency: { name: "RBTC", symbol: "RBTC", decimals: 18 },
      rpcUrls: { default: { http: [node.url] } },
    });
    const client = createPublicClient({ chain, transport: http(node.url) });
    const viaViem = await client.createAccessList({
      account: wallet.address as `0x${string}`,
      to: store as `0x${string}`,
      data: data as `0x${string}`,
    });
    expect(viaViem.gasUsed).toBe(BigInt(out.gasUsed));
    expect(viaViem.accessList).toEqual(out.accessList);

    // sent as a typed transaction with that list, it uses exactly gasUsed
    for (const type of [1, 2]) {
      const again = await result<AccessListResult>("eth_createAccessList", [
        { from, to: store, data },
      ]);
      const sent = await wallet.sendTransaction({
        type,
        to: store,
        data,
        accessList: again.accessList,
        gasLimit: 500_000n,
      });
      const receipt = await sent.wait();
      expect(receipt!.status).toBe(1);
      expect(receipt!.gasUsed).toBe(BigInt(again.gasUsed));
    }
  });

  it("leaves out the sender, the recipient and precompiles, without slots", async () => {
    const out = await result<AccessListResult>("eth_createAccessList", [
      { from: wallet.address, to: store, data: storeAbi.encodeFunctionData("probe") },
      "latest",
    ]);
    expect(out.accessList).toEqual([
      { address: "0x000000000000000000000000000000000000beef", storageKeys: [] },
    ]);
  });

  it("answers the error of a call that fails, with what it touched", async () => {
    const out = await result<AccessListResult>("eth_createAccessList", [
      { from: wallet.address, to: store, data: storeAbi.encodeFunctionData("fail") },
    ]);
    expect(out.error).toBe("execution reverted");
    expect(out.accessList).toEqual([{ address: store, storageKeys: [slot(1n)] }]);
    expect(BigInt(out.gasUsed)).toBeGreaterThan(21_000n);
  });

  it("keeps the request's own list, and counts it", async () => {
    const data = storeAbi.encodeFunctionData("count");
    const plain = await result<AccessListResult>("eth_createAccessList", [{ to: store, data }]);
    expect(plain.accessList).toEqual([{ address: store, storageKeys: [slot(1n)] }]);
    const extra = "0x00000000000000000000000000000000000000aa";
    const withList = await result<AccessListResult>("eth_createAccessList", [
      { to: store, data, accessList: [{ address: extra, storageKeys: [slot(3n)] }] },
    ]);
    expect(withList.accessList).toEqual([
      { address: extra, storageKeys: [slot(3n)] },
      { address: store, storageKeys: [slot(1n)] },
    ]);
    // 80 gas a byte of the list's RLP, more bytes for the longer list
    expect(BigInt(withList.gasUsed)).toBeGreaterThan(BigInt(plain.gasUsed));
    expect((BigInt(withList.gasUsed) - BigInt(plain.gasUsed)) % 80n).toBe(0n);
  });

  it("refuses bad params with -32602", async () => {
    const cases: [unknown[], RegExp][] = [
      [[], /missing value for required argument 0/],
      [["0x1"], /invalid argument 0: expected a call object/],
      [[{ to: store, accessList: "x" }], /invalid argument 0: accessList:/],
      [[{ to: store, gas: "0x10" }], /invalid argument 0: gas: intrinsic gas too low/],
      [[{ to: store }, "0xffffff"], /not found/],
      [[{ to: store }, "latest", 1], /too many arguments, want at most 2/],
    ];
    for (const [params, message] of cases) {
      const res = await call(node.url, "eth_createAccessList", params);
      expect(res.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(res.error?.message, JSON.stringify(params)).toMatch(message);
    }
  });
});
