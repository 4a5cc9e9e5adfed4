import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { genesisHeader } from "@nodex/chain";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type BlockHeader,
  bytesToHex,
  deriveDevAccounts,
  headerHash,
  keccak256,
  NETWORKS,
  nullLogger,
  signTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { createNode, type NodexNode, parseCommandLine } from "../../src/index.js";

// The node wired as `nodex --regtest` runs it, started in this process on a chain anchored at
// an upstream block (`createNode`'s anchor), answered over real HTTP.

const N = 1_000_000n;
const [alice, bob] = deriveDevAccounts();
const FUNDS = 3n * 10n ** 18n;

const dirs: string[] = [];
const nodes: NodexNode[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The upstream's state at the fork (alice funded), written into the datadir's database. */
async function writeUpstreamState(datadir: string): Promise<Uint8Array> {
  mkdirSync(datadir, { recursive: true });
  const db = await Database.open(join(datadir, "db"));
  try {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(alice!.address, FUNDS);
    const root = await state.commit();
    await db.write(store.takeWrites([root]));
    store.confirmWrites();
    return root;
  } finally {
    await db.close();
  }
}

function runConfig(datadir: string) {
  const command = parseCommandLine({
    argv: [
      "--regtest",
      "--datadir",
      datadir,
      "--rpc-port",
      "0",
      "--no-p2p",
      "--rpc-worker-threads",
      "0",
    ],
    env: {},
    isTTY: false,
  });
  if (command.kind !== "run") throw new Error(`not a run: ${command.kind}`);
  return command.config;
}

async function startAnchored(datadir: string, header: BlockHeader) {
  const node = createNode(runConfig(datadir), nullLogger, { anchor: { header } });
  nodes.push(node);
  await node.start();
  const bound = node.rpc()!.address()!;
  const url = `http://${bound.host}:${bound.port}`;
  let id = 0;
  const rpc = async (method: string, params: unknown[] = []) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
  };
  return { node, rpc };
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

describe("a regtest node on an anchored chain", () => {
  it("serves blocks from the anchor on, mines on it, and resets to the anchor", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-anchored-node-"));
    dirs.push(datadir);
    const root = await writeUpstreamState(datadir);
    const header: BlockHeader = {
      ...genesisHeader(NETWORKS.regtest, root),
      number: N,
      parentHash: keccak256(new TextEncoder().encode("upstream block 999999")),
      timestamp: 1_700_000_000n,
      gasLimit: 9_000_000n,
    };
    const anchorHash = bytesToHex(headerHash(header));
    const { rpc } = await startAnchored(datadir, header);

    expect((await rpc("eth_blockNumber")).result).toBe(hex(N));
    const earliest = (await rpc("eth_getBlockByNumber", ["earliest", false])).result as {
      number: string;
      hash: string;
      transactions: unknown[];
    };
    expect(earliest).toMatchObject({ number: hex(N), hash: anchorHash, transactions: [] });
    expect((await rpc("eth_getBlockByNumber", [hex(N - 1n), false])).result).toBeNull();
    expect((await rpc("eth_getBalance", [bytesToHex(alice!.address), "latest"])).result).toBe(
      hex(FUNDS),
    );
    const snapshot = (await rpc("evm_snapshot")).result as string;

    // Automine: each transaction a block on the anchor.
    const gasPrice = BigInt((await rpc("eth_gasPrice")).result as string);
    for (let nonce = 0n; nonce < 3n; nonce++) {
      const tx = signTransaction(
        {
          nonce,
          gasPrice,
          gasLimit: 21_000n,
          to: bob!.address,
          value: 5n,
          data: new Uint8Array(),
        },
        alice!.privateKey,
        Number(NETWORKS.regtest.chainId),
      );
      const sent = await rpc("eth_sendRawTransaction", [bytesToHex(tx.raw)]);
      expect(sent.error).toBeUndefined();
    }
    expect((await rpc("eth_blockNumber")).result).toBe(hex(N + 3n));
    const next = (await rpc("eth_getBlockByNumber", [hex(N + 1n), false])).result as {
      parentHash: string;
      gasLimit: string;
    };
    expect(next.parentHash).toBe(anchorHash);
    expect((await rpc("eth_getBalance", [bytesToHex(bob!.address), "latest"])).result).toBe("0xf");
    const fees = (await rpc("eth_feeHistory", ["0x400", "latest", []])).result as {
      oldestBlock: string;
      gasUsedRatio: number[];
    };
    expect(fees.oldestBlock).toBe(hex(N));
    expect(fees.gasUsedRatio).toHaveLength(4);
    const logs = await rpc("eth_getLogs", [{ fromBlock: "earliest", toBlock: "latest" }]);
    expect(logs.result).toEqual([]);

    expect((await rpc("evm_revert", [snapshot])).result).toBe(true);
    expect((await rpc("eth_blockNumber")).result).toBe(hex(N));
    expect((await rpc("eth_getBalance", [bytesToHex(bob!.address), "latest"])).result).toBe("0x0");
    await rpc("evm_mine");
    expect((await rpc("eth_blockNumber")).result).toBe(hex(N + 1n));
    expect((await rpc("evm_reset")).error).toBeUndefined();
    expect((await rpc("eth_blockNumber")).result).toBe(hex(N));
  });

  it("refuses the datadir of an anchored chain when started without its anchor", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-anchored-node-"));
    dirs.push(datadir);
    const root = await writeUpstreamState(datadir);
    const header = { ...genesisHeader(NETWORKS.regtest, root), number: N, parentHash: root };
    const { node } = await startAnchored(datadir, header);
    await node.stop();
    const again = createNode(runConfig(datadir), nullLogger);
    nodes.push(again);
    await expect(again.start()).rejects.toMatchObject({
      code: "CHAIN_OTHER_CHAIN",
      message: expect.stringMatching(
        /^the datadir holds a chain anchored at block 1000000 0x[0-9a-f]{64}, not this network's genesis chain/,
      ),
    });
  });
});
