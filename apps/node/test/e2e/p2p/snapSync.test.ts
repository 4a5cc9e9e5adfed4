import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BigChain, LARGE_CHAIN } from "../helpers/bigChain.js";
import { type BigChainCopy, bigChainDatadir } from "../helpers/bigChainCache.js";
import { type RunningNode, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";
import { type AccountProof, verifyAccount, verifyStorage } from "../proofs/verify.js";

// A producer with the large chain (5,000 blocks, 50,000 accounts, 10,000 slots; on 127.0.0.2)
// and two followers with copies of it (127.0.0.3 and .4): a fresh node on 127.0.0.6 joins with
// --sync-mode snap, checks every header from genesis, downloads the state at a pivot 64 blocks
// below the head from the three, runs the blocks after it, and then follows new blocks.

const nodes: RunningNode[] = [];
const copies: BigChainCopy[] = [];
afterAll(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.stop()));
  for (const copy of copies.splice(0)) copy.remove();
});

async function peerWithChain(host: string): Promise<RunningNode> {
  const copy = await bigChainDatadir(LARGE_CHAIN);
  copies.push(copy);
  const node = await startNode({
    network: "--devnet",
    args: ["--p2p-host", host, "--p2p-port", "0", "--no-automine"],
    datadir: copy.datadir,
  });
  nodes.push(node);
  return node;
}

async function snapNode(host: string, bootnodes: readonly string[]): Promise<RunningNode> {
  const node = await startNode({
    network: "--devnet",
    args: [
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

type Block = { number: string; hash: string; stateRoot: string };
const latest = async (node: RunningNode) =>
  (await rpc(node, "eth_getBlockByNumber", ["latest", false])) as Block;

describe("snapshot sync of a chain of 5,000 blocks and 50,000 accounts", () => {
  let chain: BigChain;
  let producer: RunningNode;
  let peers: string[];

  beforeAll(async () => {
    const a = await peerWithChain("127.0.0.2");
    chain = (await bigChainDatadir(LARGE_CHAIN)).chain;
    const [f1, f2] = await Promise.all([peerWithChain("127.0.0.3"), peerWithChain("127.0.0.4")]);
    producer = a;
    peers = [a, f1!, f2!].map(p2pAddress);
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
    // New blocks on the producer reach it.
    await rpc(producer, "evm_mine");
    await rpc(producer, "evm_mine");
    const next = await latest(producer);
    await until("the snapshot node to follow", async () =>
      (await latest(node)).hash === next.hash ? true : undefined,
    );
    expect(await rpc(node, "eth_syncing")).toBe(false);
  }, 300_000);
});
