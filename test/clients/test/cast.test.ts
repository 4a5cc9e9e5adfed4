// Foundry's cast, as its users run it (EIP-1559 sends, no --legacy), against nodex --regtest.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  COINBASE,
  DEV_ACCOUNT,
  DEV_ACCOUNT_2,
  DEV_KEY,
  type Nodex,
  startNodex,
} from "./helpers/nodex.js";
import { compile } from "./helpers/solidity.js";

const require = createRequire(import.meta.url);
const arch = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch];
/** The binary @foundry-rs/cast ships in its platform package. */
const CAST = join(
  dirname(require.resolve(`@foundry-rs/cast-${process.platform}-${arch}/package.json`)),
  "bin",
  process.platform === "win32" ? "cast.exe" : "cast",
);

let node: Nodex;

interface CastResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function cast(...args: string[]): Promise<CastResult> {
  return castAt(node.url, ...args);
}

function castAt(url: string, ...args: string[]): Promise<CastResult> {
  return new Promise((resolve) => {
    execFile(
      CAST,
      args,
      // The node's URL as cast users set it once (`--rpc-url` would be taken for a constructor
      // argument after `send --create`).
      { env: { ...process.env, ETH_RPC_URL: url }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        resolve({ code, stdout: stdout.trim(), stderr: stderr.trim() });
      },
    );
  });
}

/** cast's standard output when it succeeded; its standard error in the failure otherwise. */
async function ok(...args: string[]): Promise<string> {
  const r = await cast(...args);
  if (r.code !== 0) throw new Error(`cast ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(node.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

interface Receipt {
  status: string;
  type: string;
  transactionHash: string;
  contractAddress: string | null;
  blockNumber: string;
  logs: { address: string; topics: string[]; data: string }[];
}

const COUNTED = "0x661fab7f24b9fdb6d088a46b82c477922b83ae7f1de8173a4670c3802fc6f921";
let counter: string;
let setReceipt: Receipt;

beforeAll(async () => {
  expect(existsSync(CAST), CAST).toBe(true);
  node = await startNodex();
});

afterAll(async () => {
  await node?.stop();
});

describe("cast against nodex --regtest", () => {
  it("chain-id answers 33", async () => {
    expect(await ok("chain-id")).toBe("33");
  });

  it("balance and nonce of a development account", async () => {
    expect(await ok("balance", DEV_ACCOUNT_2)).toBe(
      BigInt((await rpc("eth_getBalance", [DEV_ACCOUNT_2, "latest"])) as string).toString(),
    );
    expect(await ok("balance", "--ether", DEV_ACCOUNT_2)).toBe("10000.000000000000000000");
    expect(await ok("nonce", DEV_ACCOUNT)).toBe("0");
  });

  it("send --value transfers ether in a type 2 transaction", async () => {
    const before = BigInt(await ok("balance", DEV_ACCOUNT_2));
    const receipt = JSON.parse(
      await ok("send", "--private-key", DEV_KEY, DEV_ACCOUNT_2, "--value", "1ether", "--json"),
    ) as Receipt;
    expect(receipt.status).toBe("0x1");
    expect(receipt.type).toBe("0x2");
    expect(BigInt(await ok("balance", DEV_ACCOUNT_2)) - before).toBe(10n ** 18n);
    expect(await ok("nonce", DEV_ACCOUNT)).toBe("1");
  });

  it("send --create deploys a contract", async () => {
    const { bytecode } = compile("Counter.sol", "Counter");
    const receipt = JSON.parse(
      await ok("send", "--private-key", DEV_KEY, "--create", bytecode, "--json"),
    ) as Receipt;
    expect(receipt.status).toBe("0x1");
    expect(receipt.contractAddress).toMatch(/^0x[0-9a-f]{40}$/);
    counter = receipt.contractAddress!;
    expect(await ok("code", counter)).toMatch(/^0x[0-9a-f]{100,}$/);
  });

  it("send calls a contract's function, which logs", async () => {
    setReceipt = JSON.parse(
      await ok("send", "--private-key", DEV_KEY, counter, "set(uint256)", "42", "--json"),
    ) as Receipt;
    expect(setReceipt.status).toBe("0x1");
    expect(setReceipt.logs).toHaveLength(1);
    expect(setReceipt.logs[0]!.topics[0]).toBe(COUNTED);
  });

  it("call reads the value back, decoded", async () => {
    expect(await ok("call", counter, "count()(uint256)")).toBe("42");
  });

  it("estimate of a call that fits answers its gas", async () => {
    const gas = Number(await ok("estimate", "--from", DEV_ACCOUNT, counter, "set(uint256)", "7"));
    expect(gas).toBeGreaterThan(21_000);
    expect(gas).toBeLessThan(100_000);
  });

  it("estimate of a call that reverts fails with the reason", async () => {
    const r = await cast("estimate", "--from", DEV_ACCOUNT, counter, "set(uint256)", "5000");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Counter: too big");
  });

  it("send of a call that reverts fails with the reason", async () => {
    const r = await cast("send", "--private-key", DEV_KEY, counter, "set(uint256)", "5000");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Counter: too big");
  });

  it("access-list names the contract and the slot it writes", async () => {
    const list = JSON.parse(
      await ok("access-list", "--from", DEV_ACCOUNT, counter, "set(uint256)", "7", "--json"),
    ) as { accessList: { address: string; storageKeys: string[] }[]; gasUsed: string };
    const entry = list.accessList.find((e) => e.address.toLowerCase() === counter);
    expect(entry?.storageKeys).toEqual([`0x${"0".repeat(64)}`]);
    expect(BigInt(list.gasUsed)).toBeGreaterThan(21_000n);
  });

  it("receipt shows the transaction's receipt, whole or one field", async () => {
    const receipt = JSON.parse(
      await ok("receipt", setReceipt.transactionHash, "--json"),
    ) as Receipt;
    const raw = (await rpc("eth_getTransactionReceipt", [setReceipt.transactionHash])) as Receipt;
    expect(receipt.blockNumber).toBe(raw.blockNumber);
    expect(receipt.logs).toEqual(raw.logs.map((l) => expect.objectContaining({ data: l.data })));
    expect(await ok("receipt", setReceipt.transactionHash, "blockNumber")).toBe(
      BigInt(raw.blockNumber).toString(),
    );
  });

  it("tx shows the transaction it sent", async () => {
    const tx = JSON.parse(await ok("tx", setReceipt.transactionHash, "--json")) as {
      from: string;
      to: string;
      type: string;
    };
    expect(tx.from.toLowerCase()).toBe(DEV_ACCOUNT.toLowerCase());
    expect(tx.to.toLowerCase()).toBe(counter);
    expect(tx.type).toBe("0x2");
  });

  it("logs finds the event by its signature and indexed argument", async () => {
    const logs = JSON.parse(
      await ok(
        "logs",
        "--from-block",
        "0",
        "--address",
        counter,
        "Counted(address indexed,uint256)",
        DEV_ACCOUNT,
        "--json",
      ),
    ) as { data: string; transactionHash: string }[];
    expect(logs).toHaveLength(1);
    expect(BigInt(logs[0]!.data)).toBe(42n);
    expect(logs[0]!.transactionHash).toBe(setReceipt.transactionHash);
  });

  it("block shows the latest block, mined by the coinbase", async () => {
    const block = JSON.parse(await ok("block", "latest", "--json")) as {
      number: string;
      miner: string;
      hash: string;
    };
    expect(BigInt(block.number).toString()).toBe(await ok("block-number"));
    expect(block.miner.toLowerCase()).toBe(COINBASE);
    expect(await ok("block", block.number, "--field", "hash")).toBe(block.hash);
  });

  it("send --unlocked --from an account impersonated with cast rpc anvil_…", async () => {
    const who = "0x00000000000000000000000000000000000cafe1";
    await ok("rpc", "anvil_impersonateAccount", who);
    await ok("rpc", "anvil_setBalance", who, "0xde0b6b3a7640000");
    const receipt = JSON.parse(
      await ok("send", "--unlocked", "--from", who, counter, "set(uint256)", "9", "--json"),
    ) as Receipt & { from: string };
    expect(receipt.status).toBe("0x1");
    expect(receipt.from.toLowerCase()).toBe(who);
    expect(await ok("call", counter, "count()(uint256)")).toBe("9");
    await ok("rpc", "anvil_stopImpersonatingAccount", who);
  });

  it("rpc eth_sendUnsignedTransaction sends for an address without its key", async () => {
    const who = "0x00000000000000000000000000000000000cafe2";
    await ok("rpc", "anvil_setBalance", who, "0xde0b6b3a7640000");
    const before = BigInt(await ok("balance", DEV_ACCOUNT_2));
    const hash = JSON.parse(
      await ok(
        "rpc",
        "eth_sendUnsignedTransaction",
        JSON.stringify({ from: who, to: DEV_ACCOUNT_2, value: "0x2a", gas: "0x5208" }),
      ),
    ) as string;
    expect(await ok("receipt", hash, "status")).toMatch(/^(1|true|1 \(success\))$/);
    expect(BigInt(await ok("balance", DEV_ACCOUNT_2)) - before).toBe(42n);
    expect(await ok("nonce", who)).toBe("1");
  });

  it("works over WebSocket too", async () => {
    const r = await castAt(node.wsUrl, "block-number");
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(await ok("block-number"));
  });

  it("rpc passes the chain's own methods through", async () => {
    expect(JSON.parse(await ok("rpc", "nodex_protocolVersion"))).toMatch(/^0x[0-9a-f]+$/);
    expect(JSON.parse(await ok("rpc", "eth_chainId"))).toBe("0x21");
  });
});
