import { describe, expect, it } from "vitest";
import { P2PErrorCode } from "../../src/errors.js";
import type { PeerInfo } from "../../src/network.js";
import { cleanUp, emptySource, eventually, network, startNode } from "./helpers.js";

cleanUp();

const GENESIS = new Uint8Array(32).fill(7);

describe("P2PNetwork connections and the status handshake", () => {
  it("logs its listening address with the peer id, and two nodes exchange statuses", async () => {
    const a = await startNode("127.0.0.2", emptySource(GENESIS));
    const b = await startNode("127.0.0.3", emptySource(GENESIS));
    const [address] = b.listenAddresses();
    expect(address).toMatch(new RegExp(`^/ip4/127\\.0\\.0\\.3/tcp/\\d+/p2p/${b.peerId}$`));
    const listening = b.records.find((r) => r.msg === "P2P listening");
    expect(listening?.ctx).toMatchObject({ addresses: [address], peerId: b.peerId });

    const connectedAtB: PeerInfo[] = [];
    b.onPeerConnected((peer) => connectedAtB.push(peer));
    const peer = await a.dial(address!);
    expect(peer).toMatchObject({ id: b.peerId, direction: "outbound" });
    expect(peer.status).toEqual(b.localStatus());
    await eventually(() => connectedAtB.length === 1, "B to see A");
    expect(connectedAtB[0]).toMatchObject({ id: a.peerId, direction: "inbound" });
    expect(connectedAtB[0]!.status).toEqual(a.localStatus());
    expect(a.peers().map((p) => p.id)).toEqual([b.peerId]);
    expect(b.peer(a.peerId)?.status.networkId).toBe(network.chainId);

    const refreshed = await a.refreshStatus(b.peerId);
    expect(refreshed).toEqual(b.localStatus());

    const left: string[] = [];
    b.onPeerDisconnected((p) => left.push(p.id));
    await a.stop();
    await eventually(() => left.length === 1, "B to see A leave");
    expect(left).toEqual([a.peerId]);
    expect(b.peers()).toEqual([]);
  });

  it("hangs up on a peer with another genesis, logging the reason on both sides", async () => {
    const a = await startNode("127.0.0.2", emptySource(GENESIS));
    const b = await startNode("127.0.0.3", emptySource(new Uint8Array(32).fill(8)));
    await expect(a.dial(b.listenAddresses()[0]!)).rejects.toMatchObject({
      code: P2PErrorCode.STATUS_MISMATCH,
      message: expect.stringMatching(/^genesis 0x0808.*, ours is 0x0707/),
    });
    const reasonAt = (node: typeof a) =>
      node.records.find((r) => r.msg === "Disconnecting peer")?.ctx.reason as string | undefined;
    expect(reasonAt(a)).toMatch(/^genesis 0x0808/);
    await eventually(() => reasonAt(b) !== undefined, "B's reason");
    expect(reasonAt(b)).toMatch(/^genesis 0x0707.*, ours is 0x0808/);
    expect(a.peers()).toEqual([]);
    expect(b.peers()).toEqual([]);
  });

  it("hangs up on a peer of another network id, naming it", async () => {
    const a = await startNode("127.0.0.2", emptySource(GENESIS));
    const b = await startNode("127.0.0.3", emptySource(GENESIS), { networkId: 34 });
    await expect(a.dial(b.listenAddresses()[0]!)).rejects.toMatchObject({
      code: P2PErrorCode.STATUS_MISMATCH,
      message: `network id 34, ours is ${network.chainId}`,
    });
    expect(a.records.find((r) => r.msg === "Disconnecting peer")?.ctx).toMatchObject({
      peer: b.peerId,
      reason: `network id 34, ours is ${network.chainId}`,
    });
    expect(b.peers()).toEqual([]);
  });

  it("refuses dials to and connections from banned addresses", async () => {
    const a = await startNode(
      "127.0.0.2",
      emptySource(GENESIS),
      {},
      {
        isBanned: (ip) => ip === "127.0.0.3",
      },
    );
    const b = await startNode("127.0.0.3", emptySource(GENESIS));
    await expect(a.dial(b.listenAddresses()[0]!)).rejects.toMatchObject({
      code: P2PErrorCode.DIAL_FAILED,
    });
    const c = await startNode("127.0.0.4", emptySource(GENESIS), {}, { isBanned: () => true });
    await expect(b.dial(c.listenAddresses()[0]!)).rejects.toMatchObject({
      code: expect.stringMatching(/P2P_(DIAL_FAILED|STREAM_CLOSED|STATUS_MISMATCH)/),
    });
    expect(c.peers()).toEqual([]);
  });

  it("keeps to the inbound connection limit", async () => {
    const a = await startNode("127.0.0.2", emptySource(GENESIS), { maxInboundPeers: 1 });
    const b = await startNode("127.0.0.3", emptySource(GENESIS));
    const c = await startNode("127.0.0.4", emptySource(GENESIS));
    await b.dial(a.listenAddresses()[0]!);
    await expect(c.dial(a.listenAddresses()[0]!)).rejects.toBeDefined();
    expect(a.peers().map((p) => p.id)).toEqual([b.peerId]);
    expect(a.connectionCount("inbound")).toBe(1);
  });

  it("keeps to the outbound connection limit", async () => {
    const a = await startNode("127.0.0.2", emptySource(GENESIS), { maxOutboundPeers: 1 });
    const b = await startNode("127.0.0.3", emptySource(GENESIS));
    const c = await startNode("127.0.0.4", emptySource(GENESIS));
    await a.dial(b.listenAddresses()[0]!);
    await expect(a.dial(c.listenAddresses()[0]!)).rejects.toMatchObject({
      code: P2PErrorCode.DIAL_FAILED,
    });
    expect(a.peers().map((p) => p.id)).toEqual([b.peerId]);
    expect(a.connectionCount("outbound")).toBe(1);
  });

  it("runs the extra libp2p services it is given", async () => {
    let started = false;
    const a = await startNode(
      "127.0.0.2",
      emptySource(GENESIS),
      {},
      {
        services: {
          extra: () => ({
            start: () => {
              started = true;
            },
            stop: () => {},
            hello: () => "hi",
          }),
        },
      },
    );
    expect(started).toBe(true);
    const services = a.libp2p.services as unknown as { extra: { hello(): string } };
    expect(services.extra.hello()).toBe("hi");
  });

  it("dials its bootnodes at start", async () => {
    const boot = await startNode("127.0.0.2", emptySource(GENESIS));
    const seen: string[] = [];
    boot.onPeerConnected((p) => seen.push(p.id));
    const a = await startNode("127.0.0.3", emptySource(GENESIS), {
      bootnodes: boot.listenAddresses(),
    });
    await eventually(() => a.peer(boot.peerId) !== undefined && seen.length === 1, "the bootnode");
    expect(seen).toEqual([a.peerId]);
  });
});
