import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { chainSourceOf, NodeKey, P2PNetwork } from "@nodex/p2p";
import { Database } from "@nodex/state";
import { NETWORKS, nullLogger } from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BigChain, LARGE_CHAIN } from "../helpers/bigChain.js";
import { type BigChainCopy, bigChainDatadir } from "../helpers/bigChainCache.js";
import { type RunningNode, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";
import { type AccountProof, verifyAccount, verifyStorage } from "../proofs/verify.js";

// A producer with the large chain (5,000 blocks, 50,000 accounts, 10,000 slots; on 127.0.0.2)
// and two followers of it, started on copies of its chain (127.0.0.3 and .4): a fresh node on
// 127.0.0.6 joins with --sync-mode snap, checks every header from genesis, downloads the state
// at a pivot 64 blocks below the head from the three, runs the blocks after it, and then follows
// new blocks.

const nodes: RunningNode[] = [];
const copies: BigChainCopy[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.stop()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
  for (const copy of copies.splice(0)) copy.remove();
});

const MODULES = ["--rpc-modules", "eth,net,web3,rpc,txpool,nodex,evm,sco"];

/** A node on a copy of the large chain; with `follow`, a follower of that producer. */
async function peerWithChain(host: string, follow?: RunningNode): Promise<RunningNode> {
  const copy = await bigChainDatadir(LARGE_CHAIN);
  copies.push(copy);
  const node = await startNode({
    network: "--devnet",
    args: [
      "--p2p-host",
      host,
      "--p2p-port",
      "0",
      "--no-automine",
      ...(follow === undefined ? [] : ["--bootnodes", p2pAddress(follow)]),
    ],
    datadir: copy.datadir,
  });
  nodes.push(node);
  return node;
}

async function snapNode(
  host: string,
  bootnodes: readonly string[],
  datadir?: string,
): Promise<RunningNode> {
  const node = await startNode({
    network: "--devnet",
    ...(datadir === undefined ? {} : { datadir }),
    args: [
      ...MODULES,
      "--p2p-host",
      host,
      "--p2p-port",
      "0",
      "--no-automine",
      "--sync-mode",
      "snap",
      "--bootnodes",
      bootnodes.join(","),
    ],
  });
  nodes.push(node);
  return node;
}

/**
 * A hostile peer on `host`: the large chain's real headers and blocks (a copy of its datadir),
 * but every state item it answers has a byte changed.
 */
async function hostilePeer(host: string): Promise<string> {
  const copy = await bigChainDatadir(LARGE_CHAIN);
  copies.push(copy);
  const db = await Database.open(join(copy.datadir, "db"));
  const chain = await Chain.open(NETWORKS.devnet, {
    db,
    executor: new Executor(NETWORKS.devnet),
    logger: nullLogger,
  });
  const honest = await chainSourceOf(chain);
  const net = await P2PNetwork.create(
    { networkId: NETWORKS.devnet.chainId, host, port: 0 },
    {
      key: await NodeKey.ephemeral(),
      chain: {
        ...honest,
        stateItems: async (items, maxBytes) =>
          (await honest.stateItems(items, maxBytes)).map((value) => {
            if (value === undefined || value.length === 0) return value;
            const forged = value.slice();
            forged[forged.length - 1]! ^= 1;
            return forged;
          }),
      },
      logger: nullLogger,
    },
  );
  await net.start();
  cleanups.push(async () => {
    await net.stop();
    await db.close();
  });
  return net.listenAddresses()[0]!;
}

type Block = { number: string; hash: string; stateRoot: string };

/** A node's last log lines, for a failure's message. */
const tail = (node: RunningNode) => node.logs().split("\n").slice(-25).join("\n");
const latest = async (node: RunningNode) =>
  (await rpc(node, "eth_getBlockByNumber", ["latest", false])) as Block;

describe("snapshot sync of a chain of 5,000 blocks and 50,000 accounts", () => {
  let chain: BigChain;
  let producer: RunningNode;
  let followers: RunningNode[];
  let peers: string[];

  beforeAll(async () => {
    const a = await peerWithChain("127.0.0.2");
    chain = (await bigChainDatadir(LARGE_CHAIN)).chain;
    followers = await Promise.all([peerWithChain("127.0.0.3", a), peerWithChain("127.0.0.4", a)]);
    producer = a;
    peers = [a, ...followers].map(p2pAddress);
  }, 300_000);

  it("reaches the producer's head and state, answers proofs of it, and follows new blocks", async () => {
    const node = await snapNode("127.0.0.6", peers);
    const phases = new Set<string>();
    const target = await latest(producer);
    await until(
      "the snapshot node to reach the producer's head",
      async () => {
        const syncing = (await rpc(node, "eth_syncing")) as false | { phase?: string };
        if (syncing !== false && syncing.phase !== undefined) phases.add(syncing.phase);
        const head = await latest(node);
        return head.hash === target.hash ? head : undefined;
      },
      240_000,
    );
    expect(phases.has("state")).toBe(true);
    expect((await latest(node)).stateRoot).toBe(chain.stateRoot);
    // Its history starts at the pivot; headers from genesis are held.
    const earliest = (await rpc(node, "eth_getBlockByNumber", ["earliest", false])) as Block;
    expect(BigInt(earliest.number)).toBe(chain.head - 64n);
    expect(await rpc(node, "eth_getBlockByNumber", ["0x1", false])).toBeNull();
    // State from the snapshot, proved against the head's root.
    const sample = chain.sampleAccounts[3]!;
    expect(BigInt((await rpc(node, "eth_getBalance", [sample.address, "latest"])) as string)).toBe(
      sample.balance,
    );
    const slot = chain.sampleSlots[2]!;
    expect(
      BigInt((await rpc(node, "eth_getStorageAt", [slot.address, slot.slot, "latest"])) as string),
    ).toBe(slot.value);
    const proof = (await rpc(node, "eth_getProof", [
      slot.address,
      [slot.slot],
      "latest",
    ])) as AccountProof;
    expect(await verifyAccount(proof, chain.stateRoot)).toBe(true);
    expect(await verifyStorage(proof.storageHash, proof.storageProof[0]!)).toBe(slot.value);
    // New blocks on the producer reach it, as they reach the followers.
    await rpc(producer, "evm_mine");
    await rpc(producer, "evm_mine");
    const next = await latest(producer);
    for (const follower of [node, ...followers])
      await until("the snapshot node and the followers to follow", async () =>
        (await latest(follower)).hash === next.hash ? true : undefined,
      );
    expect(await rpc(node, "eth_syncing")).toBe(false);
  }, 300_000);

  it("bans a peer that serves forged state, and resumes after kill -9 mid-download", async () => {
    const hostile = await hostilePeer("127.0.0.25");
    const datadir = mkdtempSync(join(tmpdir(), "nodex-e2e-snap-"));
    cleanups.push(async () => rmSync(datadir, { recursive: true, force: true }));
    const first = await snapNode("127.0.0.7", [hostile, peers[0]!], datadir);
    // The forged answers get their sender banned while the state comes from the producer.
    await until(
      "the hostile peer's ban",
      async () => {
        const records = (await rpc(first, "sco_peerList")) as {
          id: string;
          type: string;
          punishedUntil: number;
        }[];
        return records.some(
          (r) => r.type === "address" && r.id === "127.0.0.25" && r.punishedUntil > Date.now(),
        )
          ? true
          : undefined;
      },
      120_000,
    );
    expect(first.logs()).toMatch(/Banning peer: bad reputation/);
    // kill -9 while the state downloads.
    const pulled = await until(
      "part of the state",
      async () => {
        const syncing = (await rpc(first, "eth_syncing")) as
          | false
          | { phase?: string; pulledStates?: string };
        return syncing !== false &&
          syncing.phase === "state" &&
          BigInt(syncing.pulledStates ?? "0x0") > 10_000n
          ? BigInt(syncing.pulledStates!)
          : undefined;
      },
      120_000,
    );
    const exited = new Promise((resolve) => first.process.once("exit", resolve));
    first.process.kill("SIGKILL");
    await exited;
    nodes.splice(nodes.indexOf(first), 1);

    const again = await snapNode("127.0.0.7", [peers[0]!, peers[1]!], datadir);
    const target = await latest(producer);
    await until(
      "the restarted node to reach the head",
      async () => ((await latest(again)).hash === target.hash ? true : undefined),
      240_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; its last log lines:\n${tail(again)}`);
    });
    // It went on with the same pivot and kept what it had downloaded.
    const line = (msg: string) => {
      const found = again
        .logs()
        .split("\n")
        .find((l) => l.includes(`"msg":"${msg}"`));
      expect(found, msg).toBeDefined();
      return JSON.parse(found!) as Record<string, unknown>;
    };
    const resumed = line("Snap sync resumes");
    const held = line("Snap sync state");
    expect(held.pivot).toBe(resumed.pivot);
    expect(held.nodes as number).toBeGreaterThanOrEqual(Number(pulled));
    expect((await latest(again)).stateRoot).toBe(chain.stateRoot);
  }, 300_000);
});
