import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, ChainReader, mergedMiningRules, SYNTHETIC_SEALER } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import { TxAdmission, TxPool } from "@nodex/txpool";
import {
  type Address,
  bytesToHex,
  deriveDevAccounts,
  hexToBytes,
  NETWORKS,
  signTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { PeerEvent } from "../../src/scoring/index.js";
import { P2PService } from "../../src/service.js";
import { eventually, recordingLogger } from "./helpers.js";

// Two nodes, each a real chain with the network's proof-of-work rules: the second syncs the
// first's blocks, then follows its new blocks by gossip; a transaction sent to either reaches
// the other's pool; a peer that gossips a block with a bad proof is banned.
const network = NETWORKS.regtest;
const executor = new Executor(network);
const rules = mergedMiningRules(network);
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;
const [alice] = deriveDevAccounts();
const BOB = hexToBytes("0x00000000000000000000000000000000000000bb") as Address;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function node(host: string) {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-service-"));
  const db = await Database.open(join(dir, "db"));
  const logger = recordingLogger();
  const chain = await Chain.open(network, {
    db,
    executor,
    logger,
    rules,
    sealer: SYNTHETIC_SEALER,
  });
  const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
  const admission = new TxAdmission(reader, new TxPool({ chainId: network.chainId }), logger);
  const service = await P2PService.create(
    { networkId: network.chainId, host, port: 0 },
    {
      datadir: dir,
      chain,
      admission,
      logger,
      // Below block 449 a header's merged-mining hash needs no ancestors.
      checkSeal: async (header) => rules.checkSeal(header, await chain.hashForMergedMining(header)),
    },
    { pollMs: 200 },
  );
  await service.start();
  cleanups.push(async () => {
    await service.stop();
    admission.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { chain, admission, service, logger };
}

const transfer = (nonce: bigint) =>
  signTransaction(
    { nonce, gasPrice: 1n, gasLimit: 21_000n, to: BOB, value: 1n, data: new Uint8Array() },
    alice!.privateKey,
    network.chainId,
  );

describe("P2PService", () => {
  it("syncs a peer's chain, follows its new blocks and gossips transactions both ways", async () => {
    const a = await node("127.0.0.2");
    for (let i = 0; i < 250; i++)
      await a.chain.mine(i % 5 === 0 ? [transfer(BigInt(i / 5))] : [], { coinbase: MINER });
    const b = await node("127.0.0.3");
    const progress: unknown[] = [];
    b.service.sync.onProgress((p) => progress.push(p));
    await b.service.network.dial(a.service.network.listenAddresses()[0]!);
    await eventually(() => b.chain.head.block.header.number === 250n, "sync to block 250", 20_000);
    expect(bytesToHex(b.chain.head.hash)).toBe(bytesToHex(a.chain.head.hash));
    expect(bytesToHex(b.chain.head.block.header.stateRoot)).toBe(
      bytesToHex(a.chain.head.block.header.stateRoot),
    );
    expect(progress[0]).toMatchObject({ startingBlock: 0n, highestBlock: 250n });
    await eventually(() => b.service.syncing() === false, "the end of the sync");

    // A new block on A reaches B by gossip (the gossip mesh forms within a heartbeat or two).
    await eventually(
      () => b.service.gossip !== undefined && a.service.network.peers().length === 1,
      "the connection",
    );
    await new Promise((r) => setTimeout(r, 1_500));
    await a.chain.mine([], { coinbase: MINER });
    await eventually(() => b.chain.head.block.header.number === 251n, "block 251 on B", 10_000);

    // A transaction sent to B reaches A's pool.
    const tx = transfer(50n);
    await b.admission.admit(tx.raw, { local: true });
    await eventually(() => a.admission.pool.status().pending === 1, "the transaction on A", 10_000);

    const peerOfB = a.service.peerList();
    expect(peerOfB).toHaveLength(1);
    expect(peerOfB[0]).toMatch(/^[0-9a-f]{8} \| 127\.0\.0\.3:\d+$/);
    const record = b.service.scoring.peerList().find((r) => r.type === "node")!;
    expect(record.validBlocks as number).toBeGreaterThanOrEqual(250);
    expect(record.score as number).toBeGreaterThan(0);
  }, 60_000);

  it("bans a peer whose gossip breaks the rules, and refuses its address afterwards", async () => {
    const a = await node("127.0.0.4");
    const b = await node("127.0.0.5");
    await b.service.network.dial(a.service.network.listenAddresses()[0]!);
    await eventually(() => a.service.network.peers().length === 1, "the connection");
    const peer = a.service.network.peers()[0]!.id;
    a.service.report(peer, PeerEvent.INVALID_BLOCK, "test");
    await eventually(() => a.service.network.peers().length === 0, "the disconnection");
    expect(a.service.scoring.isBanned("127.0.0.5")).toBe(true);
    // Once B has seen the connection close too (a dial would otherwise reuse it), a new one is
    // refused.
    await eventually(() => b.service.network.peers().length === 0, "B to see the disconnection");
    await expect(b.service.network.dial(a.service.network.listenAddresses()[0]!)).rejects.toThrow();
    expect(a.logger.records.some((r) => r.msg === "Banning peer: bad reputation")).toBe(true);
  }, 30_000);
});
