import { AccountReader, Bucket, codeKey, type Database, NodeStore } from "@nodex/state";
import { type BlockHeader, bytesToHex, equalBytes, headerHash, keccak256 } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { type ChainSource, chainSourceOf } from "../../src/chainSource.js";
import type { PeerFault } from "../../src/network.js";
import { PeerEvent, PeerScoring } from "../../src/scoring/index.js";
import { SnapSync, type SnapSyncOptions } from "../../src/snapSync.js";
import {
  chainWithBlocks,
  chainWithState,
  cleanUp,
  eventually,
  fundedAddress,
  recordingLogger,
  startNode,
  tempDatabase,
} from "./helpers.js";
import { StateSyncDouble, TestSnapChain } from "./snapDoubles.js";

cleanUp();

const FAST: Partial<SnapSyncOptions> = {
  pivotDistance: 8,
  minSnapDistance: 16,
  pivotMaxLag: 16,
  headersPerRequest: 8,
  itemsPerRequest: 32,
  requestTimeoutMs: 5_000,
  statusPollMs: 100,
  retryDelayMs: 50,
  progressLogMs: 200,
  peerBudget: { capacity: 1_000_000, refillPerSecond: 1_000_000 },
};
const GENEROUS = { rateLimit: { capacity: 1_000_000, refillPerSecond: 1_000_000 } };

interface Report {
  readonly peer: string;
  readonly event: PeerEvent;
  readonly reason: string | undefined;
}

/** A server with a state of `accounts` accounts and `blocks` blocks after it; a syncing node. */
async function setUp(accounts: number, blocks: number, serverLimits = GENEROUS) {
  const server = await chainWithState(accounts, blocks);
  const serverNode = await startNode("127.0.0.2", await chainSourceOf(server.chain), serverLimits);
  const { chain: empty } = await chainWithBlocks(0);
  const source = await chainSourceOf(empty);
  const client = await startNode("127.0.0.3", source, GENEROUS);
  await client.dial(serverNode.listenAddresses()[0]!);
  const snapChain = new TestSnapChain(await tempDatabase(), (await source.headerByNumber(0n))!);
  const reports: Report[] = [];
  const logger = recordingLogger();
  const snap = (opts: Partial<SnapSyncOptions> = {}) =>
    new SnapSync(
      client,
      snapChain,
      { logger, report: (peer, event, reason) => reports.push({ peer, event, reason }) },
      { ...FAST, ...opts },
    );
  return { server, serverNode, client, snapChain, reports, logger, snap };
}

/** The accounts the server funded read from the synced database at `root`: as the server has them. */
async function expectSameState(
  serverChain: Awaited<ReturnType<typeof chainWithState>>["chain"],
  db: Database,
  header: BlockHeader,
  accounts: number,
  runtime: Uint8Array,
) {
  const synced = new AccountReader(new NodeStore(db), header.stateRoot);
  const theirs = serverChain.accountsAt(header);
  for (let i = 0; i < accounts; i++) {
    const address = fundedAddress(i);
    const ours = await synced.getAccount(address);
    expect(ours).toBeDefined();
    expect(ours).toEqual(await theirs.getAccount(address));
  }
  expect(await db.get(Bucket.TRIE, codeKey(keccak256(runtime)))).toEqual(runtime);
}

/** `chain`'s source, but a peer that never answers a state items request; `asked` counts them. */
async function stallingSource(
  chain: Parameters<typeof chainSourceOf>[0],
): Promise<{ stalling: ChainSource; asked: () => number }> {
  const honest = await chainSourceOf(chain);
  let asked = 0;
  const stalling: ChainSource = {
    ...honest,
    head: () => honest.head(),
    stateItems: () => {
      asked++;
      return new Promise(() => {});
    },
  };
  return { stalling, asked: () => asked };
}

describe("SnapSync", () => {
  it("syncs headers, state and the pivot block from a peer, and installs the snapshot", async () => {
    const { server, snapChain, snap, logger } = await setUp(300, 30);
    const sync = snap();
    const result = await sync.run();
    const head = server.chain.head.block.header.number;
    expect(result).toMatchObject({ result: "installed", pivot: head - 8n });
    const pivot = snapChain.headers.get(head - 8n)!;
    expect(result.result === "installed" && equalBytes(result.hash, headerHash(pivot))).toBe(true);
    // Every header to the pivot, linked, as the server has them.
    for (let n = 1n; n <= head - 8n; n++)
      expect(headerHash(snapChain.headers.get(n)!)).toEqual(
        (await server.chain.getCanonicalHash(n))!,
      );
    expect(snapChain.installed?.block.header.number).toBe(head - 8n);
    expect(snapChain.installed?.receipts).toHaveLength(1);
    await expectSameState(server.chain, snapChain.db, pivot, 300, server.runtime);
    const progress = sync.progress()!;
    expect(progress).toMatchObject({
      phase: "blocks",
      pivot: head - 8n,
      headers: { done: Number(head - 8n), total: Number(head - 8n) },
    });
    expect(progress.state.accounts).toBeGreaterThanOrEqual(300);
    expect(progress.state.codes).toBe(2);
    expect(progress.state.slots).toBeGreaterThanOrEqual(1);
    expect(progress.state.pending).toBe(0);
    expect(logger.records.some((r) => r.msg === "Snapshot installed")).toBe(true);
  });

  it("answers full when the best head is too close for a snapshot", async () => {
    const { snap, snapChain } = await setUp(5, 3);
    const result = await snap().run();
    expect(result).toMatchObject({ result: "full" });
    expect(snapChain.pivots).toEqual([]);
  });

  it("reports a peer that answers wrong state bytes and completes from the honest one", async () => {
    const { server, client, snapChain, snap, reports } = await setUp(300, 30);
    const honest = await chainSourceOf(server.chain);
    const hostile: ChainSource = {
      ...honest,
      head: () => honest.head(),
      // The right items with one byte changed: each hashes to something else.
      stateItems: async (items, maxBytes) =>
        (await honest.stateItems(items, maxBytes)).map((bytes) =>
          bytes === undefined ? undefined : Uint8Array.from(bytes, (b, i) => (i === 0 ? b ^ 1 : b)),
        ),
    };
    const hostileNode = await startNode("127.0.0.4", hostile, GENEROUS);
    await client.dial(hostileNode.listenAddresses()[0]!);
    const result = await snap({ itemsPerRequest: 16 }).run();
    expect(result).toMatchObject({ result: "installed" });
    const bad = reports.filter((r) => r.peer === hostileNode.peerId);
    expect(bad).toHaveLength(1);
    expect(bad[0]!.event).toBe(PeerEvent.INVALID_MESSAGE);
    expect(bad[0]!.reason).toMatch(/^state items: item 0x[0-9a-f]{64} does not hash to its bytes$/);
    // The event bans: scoring punishes the peer for it.
    expect(new PeerScoring().record("hostile", "127.0.0.4", bad[0]!.event).punished).toBe(true);
    expect(reports.filter((r) => r.peer !== hostileNode.peerId)).toEqual([]);
    const pivot = snapChain.headers.get(result.result === "installed" ? result.pivot : 0n)!;
    await expectSameState(server.chain, snapChain.db, pivot, 300, server.runtime);
  });

  it("resumes after a stop: the stored headers, the pivot, and the state already written", async () => {
    const { server, snapChain, snap } = await setUp(300, 30);
    const first = snap({ itemsPerRequest: 8, parallelRequests: 1 });
    const running = first.run();
    await eventually(
      () => (first.progress()?.state.nodes ?? 0) >= 40,
      "some state downloaded",
      15_000,
    );
    await first.stop();
    expect(await running).toEqual({ result: "stopped" });
    const head = server.chain.head.block.header.number;
    expect(snapChain.pivot).toBe(head - 8n);
    expect((await snapChain.headerTip()).number).toBe(head - 8n);
    expect(snapChain.installed).toBeUndefined();
    const before = snapChain.engines[0]!.written;
    expect(before).toBeGreaterThanOrEqual(40);

    const second = snap();
    const result = await second.run();
    expect(result).toMatchObject({ result: "installed", pivot: head - 8n });
    // The same pivot, the headers not asked again, the written state not asked again.
    expect(snapChain.pivots).toEqual([head - 8n]);
    const resumed = snapChain.engines[1]!;
    expect(resumed.walked).toBe(before);
    // Every item of the state written once: by the first run or by the second.
    const root = snapChain.headers.get(head - 8n)!.stateRoot;
    const complete = await StateSyncDouble.open(snapChain.db, root);
    expect(complete.done).toBe(true);
    expect(before + resumed.written).toBe(complete.walked);
    await expectSameState(
      server.chain,
      snapChain.db,
      snapChain.headers.get(head - 8n)!,
      300,
      server.runtime,
    );
  });

  it("moves the pivot when the peer's head runs far ahead", async () => {
    const { server, snapChain, snap } = await setUp(50, 30);
    let release!: () => void;
    snapChain.gate = new Promise((resolve) => {
      release = resolve;
    });
    const sync = snap();
    const running = sync.run();
    const head = server.chain.head.block.header.number;
    await eventually(() => sync.progress()?.phase === "state", "the state phase", 15_000);
    expect(snapChain.pivots).toEqual([head - 8n]);
    // The peer's head runs 30 blocks ahead: over pivotMaxLag (16) above the pivot.
    await server.more(30);
    await eventually(
      () => (sync.progress()?.highestBlock ?? 0n) === head + 30n,
      "the new head seen",
    );
    release();
    const result = await running;
    expect(result).toMatchObject({ result: "installed", pivot: head + 30n - 8n });
    expect(snapChain.pivots).toEqual([head - 8n, head + 30n - 8n]);
    expect((await snapChain.headerTip()).number).toBe(head + 30n - 8n);
    const pivot = snapChain.headers.get(head + 30n - 8n)!;
    expect(snapChain.installed?.block.header.number).toBe(pivot.number);
    await expectSameState(server.chain, snapChain.db, pivot, 50, server.runtime);
  });

  it("moves the pivot when no peer holds the pivot's state any more", async () => {
    const { server, serverNode, client, snapChain, snap } = await setUp(50, 30);
    const head = server.chain.head.block.header.number;
    const oldRoot = server.mined.at(-1 - 8)!.block.header.stateRoot;
    const honest = await chainSourceOf(server.chain);
    let refused = 0;
    // The head the peer tells: held while the test mines, so that it moves at once.
    let told: ReturnType<ChainSource["head"]> | undefined = honest.head();
    // A peer that pruned the state of block head - 8: its root is not there any more.
    const pruned: ChainSource = {
      ...honest,
      head: () => told ?? honest.head(),
      stateItems: async (items, maxBytes) => {
        const found = await honest.stateItems(items, maxBytes);
        return found.map((bytes, i) => {
          if (!equalBytes(items[i]!.hash, oldRoot)) return bytes;
          refused++;
          return undefined;
        });
      },
    };
    await serverNode.stop();
    const prunedNode = await startNode("127.0.0.4", pruned, GENEROUS);
    await client.dial(prunedNode.listenAddresses()[0]!);
    const sync = snap();
    const running = sync.run();
    await eventually(() => refused >= 2, "the pivot's root asked and refused", 15_000);
    expect(snapChain.pivots).toEqual([head - 8n]);
    // Five more blocks: under pivotMaxLag, but a newer pivot whose state the peer holds.
    await server.more(5);
    told = undefined;
    const result = await running;
    expect(result).toMatchObject({ result: "installed", pivot: head + 5n - 8n });
    expect(snapChain.pivots).toEqual([head - 8n, head + 5n - 8n]);
    await expectSameState(
      server.chain,
      snapChain.db,
      snapChain.headers.get(head + 5n - 8n)!,
      50,
      server.runtime,
    );
  });

  it("releases the items asked of a peer that leaves mid-request to the other peers", async () => {
    const { server, client, snapChain, snap } = await setUp(50, 30);
    const { stalling, asked } = await stallingSource(server.chain);
    const stallingNode = await startNode("127.0.0.4", stalling, GENEROUS);
    await client.dial(stallingNode.listenAddresses()[0]!);
    // Far longer than the test may take: only the peer's leaving frees its items.
    const sync = snap({ requestTimeoutMs: 120_000, itemsPerRequest: 8 });
    const running = sync.run();
    await eventually(() => asked() >= 1, "a request to the stalling peer", 15_000);
    await client.disconnect(stallingNode.peerId, "test");
    const result = await running;
    expect(result).toMatchObject({ result: "installed" });
    await expectSameState(
      server.chain,
      snapChain.db,
      snapChain.headers.get((result as { pivot: bigint }).pivot)!,
      50,
      server.runtime,
    );
  });

  it("stops promptly with requests in flight", async () => {
    const { server, serverNode, client, snap } = await setUp(50, 30);
    const { stalling, asked } = await stallingSource(server.chain);
    await serverNode.stop();
    const stallingNode = await startNode("127.0.0.4", stalling, GENEROUS);
    await client.dial(stallingNode.listenAddresses()[0]!);
    const sync = snap({ requestTimeoutMs: 120_000 });
    const running = sync.run();
    // The state's root: the one item there is to ask for at first.
    await eventually(() => asked() >= 1, "a request to the stalling peer", 15_000);
    expect(sync.progress()?.phase).toBe("state");
    await sync.stop();
    expect(await running).toEqual({ result: "stopped" });
  });

  it("reports a peer whose headers the chain refuses and asks another for them", async () => {
    const { server, client, snapChain, snap, reports } = await setUp(50, 30);
    // A peer on another chain of the same genesis, whose headers the consensus checks refuse.
    const other = await chainWithBlocks(20);
    const otherNode = await startNode("127.0.0.4", await chainSourceOf(other.chain), GENEROUS);
    await client.dial(otherNode.listenAddresses()[0]!);
    const sealed = new Set<string>();
    for (let n = 1n; n <= server.chain.head.block.header.number; n++)
      sealed.add(bytesToHex((await server.chain.getCanonicalHash(n))!));
    snapChain.checkHeader = (header) =>
      sealed.has(bytesToHex(headerHash(header))) ? undefined : "invalid seal";
    const result = await snap().run();
    expect(result).toMatchObject({ result: "installed" });
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ peer: otherNode.peerId, event: PeerEvent.INVALID_HEADER });
    // Its first batch fails the seal check, or does not link to the honest headers before it.
    expect(reports[0]!.reason).toMatch(
      /^headers from \d+: header \d+(: invalid seal| is not the child of header \d+)$/,
    );
    expect(new PeerScoring().record("other", "127.0.0.4", PeerEvent.INVALID_HEADER).punished).toBe(
      true,
    );
    const pivot = (result as { pivot: bigint }).pivot;
    for (let n = 1n; n <= pivot; n++)
      expect(headerHash(snapChain.headers.get(n)!)).toEqual(
        (await server.chain.getCanonicalHash(n))!,
      );
  });

  it("ends run with the error when the state engine fails", async () => {
    const { snapChain, snap } = await setUp(20, 30);
    const open = snapChain.openStateSync.bind(snapChain);
    snapChain.openStateSync = async (root) => {
      const engine = await open(root);
      return {
        take: (max) => engine.take(max),
        deliver: async () => {
          throw new Error("the database is full");
        },
        release: (items) => engine.release(items),
        retarget: (next) => engine.retarget(next),
        get done() {
          return engine.done;
        },
        progress: () => engine.progress(),
      };
    };
    await expect(snap().run()).rejects.toThrow("the database is full");
    expect(snapChain.installed).toBeUndefined();
  });

  it("keeps its requests within a peer's rate limit, so the peer never refuses one", async () => {
    const limit = { capacity: 100, refillPerSecond: 150 };
    const { serverNode, snap } = await setUp(300, 30, { rateLimit: limit });
    const serverFaults: PeerFault[] = [];
    serverNode.onPeerFault((f) => serverFaults.push(f));
    const sync = snap({ peerBudget: { capacity: 90, refillPerSecond: 120 } });
    const result = await sync.run();
    expect(result).toMatchObject({ result: "installed" });
    // Hundreds of items asked: well over the peer's burst, never over its limit.
    expect(sync.progress()!.state.nodes).toBeGreaterThan(limit.capacity);
    expect(serverFaults).toEqual([]);
  });

  it("reports a peer whose pivot block does not match its header and takes it from another", async () => {
    const { server, serverNode, client, snapChain, snap, reports } = await setUp(50, 30);
    const honest = await chainSourceOf(server.chain);
    // Another block's body: one transfer, like the pivot's, but not the pivot's.
    const hostile: ChainSource = {
      ...honest,
      head: () => honest.head(),
      bodyByHash: async () => honest.bodyByHash(server.mined[1]!.hash),
    };
    // The hostile peer connects first, so it is the first asked for the block.
    await serverNode.stop();
    const hostileNode = await startNode("127.0.0.4", hostile, GENEROUS);
    await client.dial(hostileNode.listenAddresses()[0]!);
    const honestNode = await startNode("127.0.0.5", honest, GENEROUS);
    await client.dial(honestNode.listenAddresses()[0]!);
    const result = await snap().run();
    expect(result).toMatchObject({ result: "installed" });
    const pivot = (result as { pivot: bigint }).pivot;
    expect(reports).toEqual([
      {
        peer: hostileNode.peerId,
        event: PeerEvent.INVALID_BLOCK,
        reason: `pivot block ${pivot}: transactions root mismatch`,
      },
    ]);
    expect(snapChain.installed?.block.transactions.map((tx) => tx.hash)).toEqual(
      server.mined
        .find((m) => m.block.header.number === pivot)!
        .block.transactions.map((tx) => tx.hash),
    );
  });
});
