import type { GossipSub } from "@libp2p/gossipsub";
import {
  blockTopic,
  type ChainSource,
  encodeVarint,
  FRAME_CAPS,
  FrameReader,
  gossipService,
  NodeKey,
  P2PNetwork,
  Protocol,
  protocolId,
} from "@nodex/p2p";
import {
  type BlockHeader,
  encodeBlock,
  headerFromItem,
  hexToBytes,
  nullLogger,
  type RLPItem,
  rlpDecode,
} from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, send, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";

// A hostile peer: a harness that speaks Nodex's protocols from its own loopback address. It
// gossips a block with a forged proof, sends a request frame over the protocol's cap, and floods
// requests past the rate limit; each time the node bans it, while an honest node keeps
// following the chain.
const NETWORK_ID = 32;

let a: RunningNode;
let honest: RunningNode;
let genesisHash: Uint8Array;
const harnesses: P2PNetwork[] = [];

beforeAll(async () => {
  const modules = ["--rpc-modules", "eth,net,web3,rpc,txpool,nodex,evm,sco"];
  a = await startNode({
    network: "--devnet",
    args: ["--p2p-host", "127.0.0.20", "--p2p-port", "0", ...modules],
  });
  honest = await startNode({
    network: "--devnet",
    args: [
      "--p2p-host",
      "127.0.0.21",
      "--p2p-port",
      "0",
      "--no-automine",
      "--bootnodes",
      p2pAddress(a),
      ...modules,
    ],
  });
  const genesis = (await rpc(a, "eth_getBlockByNumber", ["0x0", false])) as { hash: string };
  genesisHash = hexToBytes(genesis.hash);
}, 60_000);

afterAll(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
  await Promise.all([a?.stop(), honest?.stop()]);
});

/** A harness on `host` that completed the handshake with A. */
async function harness(host: string, gossip = false): Promise<{ net: P2PNetwork; peer: string }> {
  const source: ChainSource = {
    genesisHash,
    head: () => ({ hash: genesisHash, number: 0n, totalDifficulty: 1n }),
    headerByNumber: async () => undefined,
    headerByHash: async () => undefined,
    bodyByHash: async () => undefined,
    receiptsByHash: async () => undefined,
  };
  const net = await P2PNetwork.create(
    { networkId: NETWORK_ID, host, port: 0 },
    {
      key: await NodeKey.ephemeral(),
      chain: source,
      logger: nullLogger,
      ...(gossip ? { services: { pubsub: gossipService() } } : {}),
    },
  );
  harnesses.push(net);
  await net.start();
  const peer = await net.dial(p2pAddress(a));
  return { net, peer: peer.id };
}

/** Whether A's scoring shows `address` punished, and its address banned from connecting. */
async function punished(address: string): Promise<boolean> {
  const records = (await rpc(a, "sco_peerList")) as {
    id: string;
    type: string;
    punishedUntil: number;
  }[];
  return records.some(
    (r) => r.type === "address" && r.id === address && r.punishedUntil > Date.now(),
  );
}

async function stillFollowing(): Promise<void> {
  await rpc(a, "evm_mine");
  const target = ((await rpc(a, "eth_getBlockByNumber", ["latest", false])) as { hash: string })
    .hash;
  await until("the honest node to follow", async () => {
    const h = (await rpc(honest, "eth_getBlockByNumber", ["latest", false])) as { hash: string };
    return h.hash === target ? true : undefined;
  });
}

describe("a hostile peer", () => {
  it("is banned for gossiping a block with a forged proof of work", async () => {
    const { net } = await harness("127.0.0.22", true);
    const pubsub = (net.libp2p.services as unknown as { pubsub: GossipSub }).pubsub;
    pubsub.subscribe(blockTopic(NETWORK_ID));
    await until("a gossip mesh with A", async () =>
      pubsub.getSubscribers(blockTopic(NETWORK_ID)).length > 0 ? true : undefined,
    );
    // A child of the head whose merged-mining proof is its parent's: it commits to another hash.
    const latest = (await rpc(a, "eth_getBlockByNumber", ["latest", false])) as Record<
      string,
      string
    >;
    const raw = (await rpc(a, "nodex_getRawBlockHeaderByHash", [latest.hash])) as string;
    // The raw header is the hashed form: the Merkle proof and coinbase come from the block.
    const parent = headerFromItem([
      ...(rlpDecode(hexToBytes(raw), "header") as RLPItem[]),
      hexToBytes(latest.bitcoinMergedMiningMerkleProof!),
      hexToBytes(latest.bitcoinMergedMiningCoinbaseTransaction!),
    ]);
    const forged: BlockHeader = {
      ...parent,
      parentHash: hexToBytes(latest.hash),
      number: parent.number + 1n,
      timestamp: parent.timestamp + 1n,
    };
    await new Promise((r) => setTimeout(r, 1_500));
    await pubsub.publish(
      blockTopic(NETWORK_ID),
      encodeBlock({ header: forged, transactions: [], uncles: [] }),
    );
    await until("the ban", async () => ((await punished("127.0.0.22")) ? true : undefined));
    expect(a.logs()).toContain("Refused a gossiped block: invalid proof of work");
    expect((await rpc(a, "net_peerList")) as string[]).not.toContainEqual(
      expect.stringContaining("127.0.0.22"),
    );
    // Banned: it cannot come back.
    await expect(net.dial(p2pAddress(a))).rejects.toThrow();
    await stillFollowing();
  }, 60_000);

  it("is banned for a request frame over the protocol's cap", async () => {
    const { net, peer } = await harness("127.0.0.23");
    const connection = net.libp2p.getConnections().find((c) => c.remotePeer.toString() === peer)!;
    const stream = await connection.newStream(protocolId(NETWORK_ID, Protocol.HEADERS_BY_HASH));
    stream.send(encodeVarint(FRAME_CAPS.headers_by_hash.request + 1));
    stream.send(new Uint8Array(100));
    const reader = new FrameReader(stream);
    await reader.read(1_000).catch(() => undefined);
    reader.release();
    await until("the ban", async () => ((await punished("127.0.0.23")) ? true : undefined));
    await stillFollowing();
  }, 60_000);

  it("is banned for flooding requests past the rate limit", async () => {
    const { net, peer } = await harness("127.0.0.24");
    // One request after another, as fast as answers come, until the node hangs up.
    let answered = 0;
    for (let i = 0; i < 200 && net.peer(peer) !== undefined; i++) {
      await net.request(peer, Protocol.HEADERS_BY_RANGE, { start: 0n, count: 192 }).then(
        () => answered++,
        () => undefined,
      );
    }
    // The bucket holds 4,096 items: 192 at a time, the 22nd request is over it.
    expect(answered).toBeGreaterThanOrEqual(21);
    expect(answered).toBeLessThan(200);
    await until("the ban", async () => ((await punished("127.0.0.24")) ? true : undefined));
    const summary = (await rpc(a, "sco_reputationSummary")) as Record<string, number>;
    expect(summary.punishments).toBeGreaterThanOrEqual(3);
    expect(summary.badReputationCount).toBeGreaterThanOrEqual(3);
    await stillFollowing();
    // The honest node was never punished.
    expect(await punished("127.0.0.21")).toBe(false);
    expect(((await rpc(a, "net_peerList")) as string[]).join()).toContain("127.0.0.21");
    expect(
      (await send(a.url, { jsonrpc: "2.0", id: 1, method: "sco_bannedAddresses" })).json,
    ).toMatchObject({
      result: [],
    });
  }, 60_000);
});
