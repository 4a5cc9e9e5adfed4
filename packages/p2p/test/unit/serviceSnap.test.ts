import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChainReader } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { TxAdmission, TxPool } from "@nodex/txpool";
import { type Address, hexToBytes, type Receipt } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { chainSourceOf } from "../../src/chainSource.js";
import { P2PService } from "../../src/service.js";
import {
  chainWithBlocks,
  chainWithState,
  cleanUp,
  eventually,
  network,
  recordingLogger,
  startNode,
  tempDatabase,
} from "./helpers.js";
import { TestSnapChain } from "./snapDoubles.js";

cleanUp();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;
const GENEROUS = { rateLimit: { capacity: 1_000_000, refillPerSecond: 1_000_000 } };

describe("P2PService with snap sync", () => {
  it("makes the snapshot first, then runs full sync; full sync waits for the snapshot", async () => {
    const server = await chainWithState(50, 30);
    const serverNode = await startNode("127.0.0.2", await chainSourceOf(server.chain), GENEROUS);
    const { chain } = await chainWithBlocks(0);
    const source = await chainSourceOf(chain);
    const snapChain = new TestSnapChain(await tempDatabase(), (await source.headerByNumber(0n))!);
    // The full chain's head when the snapshot is installed: full sync must not have run yet.
    let headAtInstall: bigint | undefined;
    const install = snapChain.installSnapshot.bind(snapChain);
    snapChain.installSnapshot = async (block, receipts: readonly Receipt[]) => {
      headAtInstall = chain.head.block.header.number;
      return install(block, receipts);
    };
    const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-service-snap-"));
    const logger = recordingLogger();
    const executor = new Executor(network);
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const admission = new TxAdmission(reader, new TxPool({ chainId: network.chainId }), logger);
    const service = await P2PService.create(
      { networkId: network.chainId, host: "127.0.0.3", port: 0 },
      {
        datadir: dir,
        chain,
        admission,
        logger,
        checkSeal: async () => undefined,
        snap: {
          chain: snapChain,
          options: {
            pivotDistance: 8,
            minSnapDistance: 16,
            statusPollMs: 100,
            retryDelayMs: 50,
            peerBudget: { capacity: 100_000, refillPerSecond: 100_000 },
          },
        },
      },
      { pollMs: 200 },
    );
    cleanups.push(async () => {
      await service.stop();
      admission.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    expect(service.snapping).toBe(true);
    await service.network.dial(serverNode.listenAddresses()[0]!);
    const head = server.chain.head.block.header.number;
    await eventually(() => snapChain.installed !== undefined, "the snapshot installed", 15_000);
    expect(snapChain.installed!.block.header.number).toBe(head - 8n);
    expect(headAtInstall).toBe(0n);
    // Then full sync: this test's full chain starts at genesis, so it imports every block.
    await eventually(
      () => chain.head.block.header.number === head,
      "full sync to the head",
      15_000,
    );
    expect(service.snapping).toBe(false);
    expect(logger.records.some((r) => r.msg === "Snapshot installed")).toBe(true);
  });
});
