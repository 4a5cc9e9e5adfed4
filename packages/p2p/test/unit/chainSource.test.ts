import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, genesisHeader } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database, EMPTY_TRIE_ROOT } from "@nodex/state";
import { type Address, headerHash, hexToBytes, NETWORKS, nullLogger } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { chainSourceOf } from "../../src/chainSource.js";
import { Synchronizer, type SyncNetwork } from "../../src/sync.js";

const network = NETWORKS.regtest;
const executor = new Executor(network);
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function newDatabase(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-source-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return db;
}

describe("chainSourceOf", () => {
  it("tells peers the genesis hash of a chain from genesis", async () => {
    const chain = await Chain.open(network, {
      db: await newDatabase(),
      executor,
      logger: nullLogger,
    });
    const genesis = chain.head.hash;
    await chain.mine([], { coinbase: MINER, timestamp: 1_000n });
    expect((await chainSourceOf(chain)).genesisHash).toEqual(genesis);
  });

  it("tells peers the anchor's hash as the genesis of an anchored chain", async () => {
    const header = {
      ...genesisHeader(network, EMPTY_TRIE_ROOT),
      number: 5_000n,
      parentHash: new Uint8Array(32).fill(9),
      timestamp: 1_000n,
    };
    const chain = await Chain.open(network, {
      db: await newDatabase(),
      executor,
      logger: nullLogger,
      anchor: { header },
    });
    await chain.mine([], { coinbase: MINER, timestamp: 1_001n });
    const source = await chainSourceOf(chain);
    expect(source.genesisHash).toEqual(headerHash(header));
    expect((await source.headerByNumber(5_001n))?.parentHash).toEqual(headerHash(header));
    expect(await source.headerByNumber(4_999n)).toBeUndefined();
  });
});

describe("Synchronizer on anchored chains", () => {
  it("finds the common ancestor at the anchor, never below it", async () => {
    const header = {
      ...genesisHeader(network, EMPTY_TRIE_ROOT),
      number: 5_000n,
      parentHash: new Uint8Array(32).fill(9),
      timestamp: 1_000n,
    };
    const open = async () =>
      Chain.open(network, {
        db: await newDatabase(),
        executor,
        logger: nullLogger,
        anchor: { header },
      });
    const ahead = await open();
    const behind = await open();
    for (let i = 1n; i <= 5n; i++) await ahead.mine([], { coinbase: MINER, timestamp: 1_000n + i });
    const served = await chainSourceOf(ahead);
    const asked: bigint[] = [];
    const peer = {
      id: "ahead",
      direction: "outbound" as const,
      remoteAddress: "/ip4/127.0.0.1/tcp/1",
      status: {
        networkId: Number(network.chainId),
        genesisHash: served.genesisHash,
        bestHash: ahead.head.hash,
        bestNumber: ahead.head.block.header.number,
        totalDifficulty: ahead.head.totalDifficulty,
      },
    };
    const net = {
      peers: () => [peer],
      peer: (id: string) => (id === peer.id ? peer : undefined),
      onPeerConnected: () => () => {},
      refreshStatus: async () => peer.status,
      request: async (_peer: string, protocol: string, req: unknown) => {
        if (protocol === "headers_by_range") {
          const { start, count } = req as { start: bigint; count: number };
          asked.push(start);
          const out = [];
          for (let n = start; n < start + BigInt(count); n++) {
            const h = await served.headerByNumber(n);
            if (h === undefined) break;
            out.push(h);
          }
          return out;
        }
        const hashes = req as Uint8Array[];
        return Promise.all(hashes.map((h) => served.bodyByHash(h)));
      },
    };
    const sync = new Synchronizer(
      net as unknown as SyncNetwork,
      {
        head: () => ({
          hash: behind.head.hash,
          number: behind.head.block.header.number,
          totalDifficulty: behind.head.totalDifficulty,
        }),
        firstNumber: behind.firstBlock.number,
        canonicalHash: (n) => behind.getCanonicalHash(n),
        checkSeal: async () => undefined,
        importBlock: (block) => behind.importBlock(block),
      },
      { logger: nullLogger },
    );
    const done = new Promise<void>((resolve) =>
      sync.onProgress((progress) => {
        if (progress === false) resolve();
      }),
    );
    sync.consider(peer.id);
    await done;
    await sync.stop();
    expect(behind.head.hash).toEqual(ahead.head.hash);
    // Headers were asked for from the block after the anchor on, none below it.
    expect(asked.every((n) => n > 5_000n)).toBe(true);
    expect(asked[asked.length - 1]).toBe(5_001n);
  });
});
