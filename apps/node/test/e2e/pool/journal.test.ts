import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { afterEach, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Signed transactions sent with eth_sendRawTransaction and still waiting come back after a
// restart on the same datadir, stopped cleanly or killed, and are mined afterwards.

const KEY2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const TO = "0x000000000000000000000000000000000000abcd";
const wallet = new Wallet(KEY2);
const sender = wallet.address.toLowerCase();
/** No block is built on its own while the test looks. */
const WAIT = ["--mine-interval", "3600"];

const sign = (nonce: number, value = 1n) =>
  wallet.signTransaction({
    to: TO,
    value,
    gasLimit: 21_000n,
    gasPrice: 0n,
    nonce,
    chainId: 33,
    type: 0,
  });

const nodes: RunningNode[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(datadir: string, args: readonly string[] = WAIT): Promise<RunningNode> {
  const node = await startNode({ datadir, args });
  nodes.push(node);
  return node;
}

function tempDatadir(): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-raw-journal-"));
  dirs.push(dir);
  return dir;
}

async function result(node: RunningNode, method: string, params: unknown[] = []) {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

/** Kills the node at once (SIGKILL): no shutdown code runs. */
async function kill(node: RunningNode): Promise<void> {
  node.process.kill("SIGKILL");
  await node.stop();
}

/** The pool after the restart holds `hash` (nonce 0, value 5) pending, and a block mines it. */
async function expectBackThenMined(node: RunningNode, hash: string) {
  const tx = (await result(node, "eth_getTransactionByHash", [hash])) as Record<string, unknown>;
  expect(tx).toMatchObject({
    hash,
    from: sender,
    to: TO,
    nonce: "0x0",
    value: "0x5",
    blockHash: null,
    blockNumber: null,
    transactionIndex: null,
  });
  expect(await result(node, "txpool_status")).toEqual({ pending: 1, queued: 0 });
  const content = (await result(node, "txpool_content")) as {
    pending: Record<string, Record<string, { hash: string }[]>>;
  };
  expect(Object.keys(content.pending)).toEqual([sender.slice(2)]);
  expect(content.pending[sender.slice(2)]!["0"]!.map((t) => t.hash)).toEqual([hash]);
  expect(await result(node, "eth_getTransactionReceipt", [hash])).toBeNull();

  expect(await result(node, "eth_blockNumber")).toBe("0x0");
  expect(await result(node, "evm_mine")).toBeNull();
  const receipt = (await result(node, "eth_getTransactionReceipt", [hash])) as Record<
    string,
    unknown
  >;
  expect(receipt).toMatchObject({
    transactionHash: hash,
    blockNumber: "0x1",
    from: sender,
    status: "0x1",
  });
  expect(await result(node, "txpool_status")).toEqual({ pending: 0, queued: 0 });
  expect(await result(node, "eth_getBalance", [TO, "latest"])).toBe("0x5");
}

describe("raw transactions waiting in the pool across a restart", () => {
  it("come back after SIGTERM and are mined with a receipt", async () => {
    const datadir = tempDatadir();
    const first = await start(datadir);
    const hash = await result(first, "eth_sendRawTransaction", [await sign(0, 5n)]);
    expect(await result(first, "txpool_status")).toEqual({ pending: 1, queued: 0 });
    expect(await first.stop()).toBe(0);

    await expectBackThenMined(await start(datadir), hash as string);
  });

  it("come back after kill -9 right after the answer: written before it", async () => {
    const datadir = tempDatadir();
    const first = await start(datadir);
    const hash = await result(first, "eth_sendRawTransaction", [await sign(0, 5n)]);
    await kill(first);

    await expectBackThenMined(await start(datadir), hash as string);
  });

  it("come back when automine was stopped with evm_stopMining", async () => {
    const datadir = tempDatadir();
    const first = await start(datadir, []);
    expect(await result(first, "evm_stopMining")).toBeNull();
    const hash = await result(first, "eth_sendRawTransaction", [await sign(0, 5n)]);
    expect(await result(first, "eth_getTransactionReceipt", [hash])).toBeNull();
    await first.stop();

    await expectBackThenMined(await start(datadir), hash as string);
  });

  it("keep a queued transaction queued behind its gap, which mines once the gap fills", async () => {
    const datadir = tempDatadir();
    const first = await start(datadir);
    const h0 = await result(first, "eth_sendRawTransaction", [await sign(0)]);
    const h2 = await result(first, "eth_sendRawTransaction", [await sign(2)]);
    expect(await result(first, "txpool_status")).toEqual({ pending: 1, queued: 1 });
    await kill(first);

    const second = await start(datadir);
    expect(await result(second, "txpool_status")).toEqual({ pending: 1, queued: 1 });
    const content = (await result(second, "txpool_content")) as {
      pending: Record<string, Record<string, { hash: string }[]>>;
      queued: Record<string, Record<string, { hash: string }[]>>;
    };
    expect(content.pending[sender.slice(2)]!["0"]![0]!.hash).toBe(h0);
    expect(content.queued[sender.slice(2)]!["2"]![0]!.hash).toBe(h2);
    expect(
      ((await result(second, "eth_getTransactionByHash", [h2])) as { nonce: string }).nonce,
    ).toBe("0x2");
    expect(await result(second, "eth_getTransactionCount", [sender, "pending"])).toBe("0x1");

    const h1 = await result(second, "eth_sendRawTransaction", [await sign(1)]);
    expect(await result(second, "txpool_status")).toEqual({ pending: 3, queued: 0 });
    await second.stop();

    // Back with automine: the three are mined at start, in nonce order.
    const third = await start(datadir, []);
    for (let i = 0; i < 100 && (await result(third, "eth_blockNumber")) === "0x0"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const block = (await result(third, "eth_getBlockByNumber", ["latest", false])) as {
      number: string;
      transactions: string[];
    };
    expect(block.transactions).toEqual([h0, h1, h2]);
    for (const hash of [h0, h1, h2]) {
      expect(
        ((await result(third, "eth_getTransactionReceipt", [hash])) as { status: string }).status,
      ).toBe("0x1");
    }
    expect(await result(third, "txpool_status")).toEqual({ pending: 0, queued: 0 });
  });
});
