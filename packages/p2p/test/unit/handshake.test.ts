import { noise } from "@chainsafe/libp2p-noise";
import { peerIdFromString } from "@libp2p/peer-id";
import { tcp } from "@libp2p/tcp";
import { yamux } from "@libp2p/yamux";
import { multiaddr } from "@multiformats/multiaddr";
import { bigintToBytes, rlpEncode } from "@nodex/types";
import { createLibp2p } from "libp2p";
import { afterEach, describe, expect, it } from "vitest";
import { FrameReader, writeFrame } from "../../src/framing.js";
import { Protocol, protocolId, ResultCode } from "../../src/protocols.js";
import { cleanUp, emptySource, eventually, network, startNode } from "./helpers.js";

cleanUp();

const bare: { stop(): void | Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(bare.splice(0).map((node) => node.stop()));
});

/** A libp2p node that speaks none of the Nodex protocols: it connects and sends no status. */
async function silentNode() {
  const node = await createLibp2p({
    addresses: { listen: [] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
  });
  bare.push(node);
  await node.start();
  return node;
}

describe("the status handshake", () => {
  it("refuses requests before it and hangs up on a peer that never sends its status", async () => {
    const server = await startNode("127.0.0.2", emptySource(), { statusTimeoutMs: 1_500 });
    const silent = await silentNode();
    await silent.dial(multiaddr(server.listenAddresses()[0]!));

    const stream = await silent.dialProtocol(
      peerIdFromString(server.peerId),
      protocolId(network.chainId, Protocol.HEADERS_BY_RANGE),
    );
    await writeFrame(stream, rlpEncode([bigintToBytes(0n), bigintToBytes(1n)]));
    await stream.close();
    const reader = new FrameReader(stream);
    const answer = await reader.read(1_000);
    reader.release();
    expect(answer?.[0]).toBe(ResultCode.INVALID_REQUEST);
    expect(new TextDecoder().decode(answer!.subarray(1))).toBe(
      "a request before the status handshake",
    );

    await eventually(() => silent.getConnections().length === 0, "the server to hang up");
    expect(server.records.find((r) => r.msg === "Disconnecting peer")?.ctx).toMatchObject({
      peer: silent.peerId.toString(),
      reason: "no status within 1500 ms",
    });
    expect(server.peers()).toEqual([]);
  });
});
