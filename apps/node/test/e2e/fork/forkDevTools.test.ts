import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbiCoder,
  Contract,
  ContractFactory,
  JsonRpcProvider,
  keccak256,
  parseEther,
  Wallet,
} from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// The development helpers (hardhat_*, anvil_*, evm_*) on a chain forked from a Nodex devnet:
// they act on the upstream's accounts as on local ones, and snapshots, resets and mining keep
// to the fork.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const DEV0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
/** An account of the upstream that holds tokens and some coin, and no key anyone knows. */
const WHALE = "0x00000000000000000000000000000000000f0e1d";
const OTHER = "0x00000000000000000000000000000000000a11ce";
const WHALE_TOKENS = 5_000n;
/** `balanceOf` is the Token's fifth variable (slot 4). */
const BALANCES_SLOT = 4n;
const DEV_ACCOUNT_BALANCE = 10_000n * 10n ** 18n;

let upstream: RunningNode;
let fork: RunningNode;
let forkDir: string;
let token: string;
let forkBlock: number;
const { Token } = compile("Token.sol");

async function ok(url: string, method: string, params: unknown[] = []) {
  const res = await call(url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result;
}

const balanceOfData = (holder: string) => `0x70a08231${holder.slice(2).padStart(64, "0")}`;
async function tokens(url: string, holder: string, block = "latest"): Promise<bigint> {
  return BigInt(await ok(url, "eth_call", [{ to: token, data: balanceOfData(holder) }, block]));
}
const transferData = (to: string, amount: bigint) =>
  `0xa9059cbb${to.slice(2).padStart(64, "0")}${amount.toString(16).padStart(64, "0")}`;
const balanceSlot = (holder: string) =>
  keccak256(AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [holder, BALANCES_SLOT]));
const hex = (n: number | bigint) => `0x${n.toString(16)}`;
const word = (n: bigint) => `0x${n.toString(16).padStart(64, "0")}`;

async function sendFromWhale(method: "eth_sendTransaction", to: string, amount: bigint) {
  const hash = await ok(fork.url, method, [
    { from: WHALE, to: token, data: transferData(to, amount), gas: "0x30000" },
  ]);
  return ok(fork.url, "eth_getTransactionReceipt", [hash]);
}

beforeAll(async () => {
  upstream = await startNode({ network: "--devnet" });
  const provider = new JsonRpcProvider(upstream.url, 32, { staticNetwork: true, cacheTimeout: -1 });
  const owner = new Wallet(KEY0, provider);
  const deployed = await new ContractFactory(Token!.abi, Token!.bytecode, owner).deploy(1_000_000n);
  await deployed.waitForDeployment();
  token = await deployed.getAddress();
  const erc20 = new Contract(token, Token!.abi, owner);
  await (await erc20.getFunction("transfer")(WHALE, WHALE_TOKENS)).wait();
  await (await owner.sendTransaction({ to: WHALE, value: parseEther("1") })).wait();
  forkBlock = Number(await ok(upstream.url, "eth_blockNumber"));
  provider.destroy();
  forkDir = mkdtempSync(join(tmpdir(), "nodex-fork-dev-"));
  fork = await startNode({
    datadir: forkDir,
    args: ["--fork-url", upstream.url, "--fork-block", String(forkBlock)],
  });
}, 120_000);

afterAll(async () => {
  await fork?.stop();
  await upstream?.stop();
  if (forkDir !== undefined) rmSync(forkDir, { recursive: true, force: true });
});

describe("the development helpers on a fork of a Nodex devnet", () => {
  it("sends from an impersonated upstream account: its tokens move on the fork only", async () => {
    // Without impersonation the node holds no key of the account.
    const refused = await call(fork.url, "eth_sendTransaction", [
      { from: WHALE, to: token, data: transferData(OTHER, 1n) },
    ]);
    expect(refused.error?.message).toMatch(/unknown account|impersonat|not.*account/i);

    expect(await ok(fork.url, "anvil_impersonateAccount", [WHALE])).toBeNull();
    const first = await sendFromWhale("eth_sendTransaction", OTHER, 40n);
    expect(first.status).toBe("0x1");
    expect(first.from).toBe(WHALE);
    expect(Number(first.blockNumber)).toBe(forkBlock + 1);
    expect(await ok(fork.url, "anvil_stopImpersonatingAccount", [WHALE])).toBeNull();

    expect(await ok(fork.url, "hardhat_impersonateAccount", [WHALE])).toBe(true);
    const second = await sendFromWhale("eth_sendTransaction", OTHER, 2n);
    expect(second.status).toBe("0x1");
    expect(await ok(fork.url, "hardhat_stopImpersonatingAccount", [WHALE])).toBe(true);

    expect(await tokens(fork.url, WHALE)).toBe(WHALE_TOKENS - 42n);
    expect(await tokens(fork.url, OTHER)).toBe(42n);
    expect(await tokens(upstream.url, WHALE)).toBe(WHALE_TOKENS);
    expect(await tokens(upstream.url, OTHER)).toBe(0n);
    // The fork block's state still reads as the upstream's.
    expect(await tokens(fork.url, WHALE, hex(forkBlock))).toBe(WHALE_TOKENS);
    // Gas was paid from the upstream's coin of the account.
    expect(BigInt(await ok(fork.url, "eth_getBalance", [WHALE, "latest"]))).toBeLessThanOrEqual(
      parseEther("1"),
    );
  });

  it("edits upstream accounts: balance, code and storage", async () => {
    const snapshot = await ok(fork.url, "evm_snapshot");
    expect(await ok(fork.url, "hardhat_setBalance", [WHALE, "0x1234"])).toBe(true);
    expect(await ok(fork.url, "eth_getBalance", [WHALE, "latest"])).toBe("0x1234");

    // The Token's balanceOf(WHALE), written where Solidity keeps it.
    expect(
      await ok(fork.url, "hardhat_setStorageAt", [token, balanceSlot(WHALE), word(777n)]),
    ).toBe(true);
    expect(await tokens(fork.url, WHALE)).toBe(777n);
    // A slot of the upstream's storage no read has fetched yet, next to the edited one.
    expect(await tokens(fork.url, DEV0)).toBe(await tokens(upstream.url, DEV0));

    // Code on an upstream account with coin: a contract answering 42 to any call.
    const answer42 = "0x602a60005260206000f3";
    expect(await ok(fork.url, "hardhat_setCode", [WHALE, answer42])).toBe(true);
    expect(await ok(fork.url, "eth_getCode", [WHALE, "latest"])).toBe(answer42);
    expect(BigInt(await ok(fork.url, "eth_call", [{ to: WHALE, data: "0x" }, "latest"]))).toBe(42n);
    // And on the upstream's contract: the Token's code replaced keeps its storage.
    expect(await ok(fork.url, "anvil_setCode", [token, answer42])).toBeNull();
    expect(BigInt(await ok(fork.url, "eth_getStorageAt", [token, balanceSlot(WHALE)]))).toBe(777n);

    expect(await ok(fork.url, "evm_revert", [snapshot])).toBe(true);
    expect(await ok(fork.url, "eth_getCode", [token, "latest"])).toBe(
      await ok(upstream.url, "eth_getCode", [token, "latest"]),
    );
    expect(await ok(fork.url, "eth_getCode", [WHALE, "latest"])).toBe("0x");
    expect(await tokens(fork.url, WHALE)).toBe(WHALE_TOKENS - 42n);
  });

  it("reverts to a snapshot across fork-state reads, writes and blocks", async () => {
    const head = Number(await ok(fork.url, "eth_blockNumber"));
    const before = await tokens(fork.url, OTHER);
    const snapshot = await ok(fork.url, "evm_snapshot");
    await ok(fork.url, "hardhat_impersonateAccount", [WHALE]);
    await sendFromWhale("eth_sendTransaction", OTHER, 100n);
    await ok(fork.url, "hardhat_setBalance", [DEV0, "0x1"]);
    // A first read of an upstream account after the snapshot: fetched, then kept by the revert.
    const ownersTokens = await tokens(fork.url, DEV0);
    expect(ownersTokens).toBe(await tokens(upstream.url, DEV0));
    expect(await tokens(fork.url, OTHER)).toBe(before + 100n);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(head + 1);

    expect(await ok(fork.url, "evm_revert", [snapshot])).toBe(true);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(head);
    expect(await tokens(fork.url, OTHER)).toBe(before);
    expect(BigInt(await ok(fork.url, "eth_getBalance", [DEV0, "latest"]))).toBe(
      DEV_ACCOUNT_BALANCE,
    );
    expect(await tokens(fork.url, DEV0)).toBe(ownersTokens);
    // Snapshot ids are single-use.
    expect(await ok(fork.url, "evm_revert", [snapshot])).toBe(false);
  });

  it("mines blocks by count on top of the fork", async () => {
    const head = Number(await ok(fork.url, "eth_blockNumber"));
    expect(await ok(fork.url, "hardhat_mine", ["0x10"])).toBe(true);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(head + 16);
    expect(await ok(fork.url, "evm_mine", [{ blocks: 3 }])).toBeNull();
    expect(await ok(fork.url, "anvil_mine", [2])).toBeNull();
    const top = head + 21;
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(top);
    // Each block's parent is the one below it, down to the fork block's (as the chain holds it).
    const first = await ok(fork.url, "eth_getBlockByNumber", [hex(forkBlock + 1), false]);
    const forkPoint = await ok(fork.url, "eth_getBlockByHash", [first.parentHash, false]);
    expect(Number(forkPoint.number)).toBe(forkBlock);
    expect(await tokens(fork.url, WHALE)).toBe(WHALE_TOKENS - 42n);
  });

  it("hardhat_reset and anvil_reset without params go back to the fork block", async () => {
    await ok(fork.url, "hardhat_setBalance", [DEV0, "0x2"]);
    expect(await ok(fork.url, "hardhat_reset", [])).toBe(true);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
    expect(await tokens(fork.url, WHALE)).toBe(WHALE_TOKENS);
    expect(await tokens(fork.url, OTHER)).toBe(0n);
    // The development accounts are funded on the fork as when it started.
    expect(BigInt(await ok(fork.url, "eth_getBalance", [DEV0, "latest"]))).toBe(
      DEV_ACCOUNT_BALANCE,
    );
    // Impersonation ended with the reset.
    const refused = await call(fork.url, "eth_sendTransaction", [
      { from: WHALE, to: token, data: transferData(OTHER, 1n) },
    ]);
    expect(refused.error).toBeDefined();

    await ok(fork.url, "evm_mine");
    expect(await ok(fork.url, "anvil_reset", [])).toBeNull();
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
    expect(await ok(fork.url, "hardhat_reset", [{}])).toBe(true);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
  });

  it("takes forking params of its own fork point; refuses another, saying how to get one", async () => {
    await ok(fork.url, "evm_mine");
    // The network helpers' reset(url, block) with this fork's URL and block: a plain reset.
    expect(
      await ok(fork.url, "hardhat_reset", [
        { forking: { jsonRpcUrl: upstream.url, blockNumber: forkBlock } },
      ]),
    ).toBe(true);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
    for (const forking of [
      { jsonRpcUrl: upstream.url, blockNumber: forkBlock - 1 },
      { jsonRpcUrl: upstream.url },
      { jsonRpcUrl: "http://127.0.0.1:9", blockNumber: forkBlock },
    ])
      for (const method of ["hardhat_reset", "anvil_reset"]) {
        const res = await call(fork.url, method, [{ forking }]);
        expect(res.error?.code).toBe(-32602);
        expect(res.error?.message).toContain(`this chain is a fork of block ${forkBlock}`);
        expect(res.error?.message).toContain("--fork-block");
      }
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
  });
});
