import { peerIdFromString } from "@libp2p/peer-id";
import {
  bigintToBytes,
  encodeBody,
  encodeHeader,
  encodeReceiptList,
  headerHash,
  rlpEncode,
} from "@nodex/types";
import { describe, expect, it } from "vitest";
import { type ChainSource, chainSourceOf } from "../../src/chainSource.js";
import { P2PErrorCode } from "../../src/errors.js";
import { encodeVarint, FrameReader, writeFrame } from "../../src/framing.js";
import type { PeerFault } from "../../src/network.js";
import { FRAME_CAPS, Protocol, protocolId, ResultCode } from "../../src/protocols.js";
import { chainWithBlocks, cleanUp, emptySource, network, startNode } from "./helpers.js";

cleanUp();

/** A server whose chain holds `blocks` mined blocks, and a client at genesis, connected. */
async function serverAndClient(blocks: number, serverOpts = {}) {
  const { chain, mined } = await chainWithBlocks(blocks);
  const { chain: empty } = await chainWithBlocks(0);
  const server = await startNode("127.0.0.2", await chainSourceOf(chain), serverOpts);
  const client = await startNode("127.0.0.3", await chainSourceOf(empty));
  const peer = await client.dial(server.listenAddresses()[0]!);
  const faults: PeerFault[] = [];
  server.onPeerFault((f) => faults.push(f));
  return { chain, mined, server, client, peer: peer.id, faults };
}

describe("request protocols", () => {
  it("serve headers by range and by hash, bodies and receipts from the chain", async () => {
    const { chain, mined, client, peer } = await serverAndClient(5);
    expect(client.peer(peer)?.status).toMatchObject({
      bestNumber: 5n,
      bestHash: chain.head.hash,
      totalDifficulty: chain.head.totalDifficulty,
    });

    const range = await client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 1n, count: 3 });
    expect(range.map(encodeHeader)).toEqual(
      mined.slice(0, 3).map((m) => encodeHeader(m.block.header)),
    );
    // Past the head: only the headers there are.
    const tail = await client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 4n, count: 10 });
    expect(tail.map((h) => h.number)).toEqual([4n, 5n]);
    expect(await client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 9n, count: 2 })).toEqual(
      [],
    );

    const [b1, b2, b3] = mined.map((m) => m.hash);
    const unknown = new Uint8Array(32).fill(1);
    const byHash = await client.request(peer, Protocol.HEADERS_BY_HASH, [b3!, b1!, unknown, b2!]);
    expect(byHash.map(headerHash)).toEqual([b3, b1]);

    const bodies = await client.request(peer, Protocol.BODIES_BY_HASH, [b2!, b1!]);
    expect(bodies.map(encodeBody)).toEqual([
      encodeBody(mined[1]!.block),
      encodeBody(mined[0]!.block),
    ]);
    expect(bodies[0]!.transactions).toHaveLength(1);
    expect(bodies[0]!.transactions[0]!.from).toEqual(mined[1]!.block.transactions[0]!.from);

    const receipts = await client.request(peer, Protocol.RECEIPTS_BY_HASH, [b1!, b3!]);
    expect(receipts.map(encodeReceiptList)).toEqual([
      encodeReceiptList(mined[0]!.receipts),
      encodeReceiptList(mined[2]!.receipts),
    ]);
    expect(receipts[0]).toHaveLength(1);
  });

  it("refuse requests over their count before sending, and unknown peers", async () => {
    const { client, peer } = await serverAndClient(1);
    await expect(
      client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 0n, count: 193 }),
    ).rejects.toMatchObject({ code: P2PErrorCode.INVALID_REQUEST });
    await expect(client.request(peer, Protocol.BODIES_BY_HASH, [])).rejects.toMatchObject({
      code: P2PErrorCode.INVALID_REQUEST,
    });
    const stranger = (await startNode("127.0.0.4", emptySource())).peerId;
    await expect(
      client.request(stranger, Protocol.HEADERS_BY_RANGE, { start: 0n, count: 1 }),
    ).rejects.toMatchObject({ code: P2PErrorCode.UNKNOWN_PEER });
  });

  it("reject a request frame over the protocol's cap, as a fault of the sender", async () => {
    const { server, client, peer, faults } = await serverAndClient(1);
    const stream = await client.libp2p.dialProtocol(
      peerIdFromString(peer),
      protocolId(network.chainId, Protocol.HEADERS_BY_HASH),
    );
    const cap = FRAME_CAPS.headers_by_hash.request;
    // The length prefix of a frame one byte over the cap, and a little of its payload.
    stream.send(encodeVarint(cap + 1));
    stream.send(new Uint8Array(100));
    const reader = new FrameReader(stream);
    const answer = await reader.read(1_000);
    reader.release();
    expect(answer?.[0]).toBe(ResultCode.INVALID_REQUEST);
    expect(new TextDecoder().decode(answer!.subarray(1))).toBe(
      `a frame of ${cap + 1} bytes is over the cap of ${cap}`,
    );
    expect(faults).toEqual([
      expect.objectContaining({
        peer: client.peerId,
        protocol: Protocol.HEADERS_BY_HASH,
        direction: "inbound",
        error: expect.objectContaining({ code: P2PErrorCode.FRAME_TOO_LARGE }),
      }),
    ]);
    // A malformed request (not a list of 32-byte hashes) is a fault too.
    const bad = await client.libp2p.dialProtocol(
      peerIdFromString(peer),
      protocolId(network.chainId, Protocol.HEADERS_BY_HASH),
    );
    await writeFrame(bad, rlpEncode([bigintToBytes(5n)]));
    await bad.close();
    const badReader = new FrameReader(bad);
    expect((await badReader.read(1_000))?.[0]).toBe(ResultCode.INVALID_REQUEST);
    badReader.release();
    expect(faults[1]?.error.code).toBe(P2PErrorCode.INVALID_REQUEST);
    // The connection is still usable.
    expect(server.peer(client.peerId)).toBeDefined();
    expect(
      await client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 0n, count: 1 }),
    ).toHaveLength(1);
  });

  it("rate-limit each peer's requests by the items asked", async () => {
    const { client, peer, faults } = await serverAndClient(3, {
      rateLimit: { capacity: 10, refillPerSecond: 0.001 },
    });
    const ask = () => client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 0n, count: 4 });
    await ask();
    await ask();
    await expect(ask()).rejects.toMatchObject({ code: P2PErrorCode.RATE_LIMITED });
    expect(faults.map((f) => [f.error.code, f.direction])).toEqual([
      [P2PErrorCode.RATE_LIMITED, "inbound"],
    ]);
    // Two tokens left: a smaller request still fits.
    expect(
      await client.request(peer, Protocol.HEADERS_BY_RANGE, { start: 1n, count: 2 }),
    ).toHaveLength(2);
  });
});

describe("answers", () => {
  it("are checked by the client: wrong headers and oversized chunks are faults of the server", async () => {
    const { chain, mined } = await chainWithBlocks(2);
    const honest = await chainSourceOf(chain);
    const genesis = (await honest.headerByNumber(0n))!;
    const lying: ChainSource = {
      ...honest,
      head: () => honest.head(),
      // Always the genesis header, whatever the number asked.
      headerByNumber: async () => genesis,
      // A header too large for a chunk.
      headerByHash: async () => ({ ...genesis, extraData: new Uint8Array(70_000) }),
    };
    const server = await startNode("127.0.0.2", lying);
    const client = await startNode(
      "127.0.0.3",
      await chainSourceOf((await chainWithBlocks(0)).chain),
    );
    const faults: PeerFault[] = [];
    client.onPeerFault((f) => faults.push(f));
    const { id } = await client.dial(server.listenAddresses()[0]!);

    await expect(
      client.request(id, Protocol.HEADERS_BY_RANGE, { start: 1n, count: 2 }),
    ).rejects.toMatchObject({
      code: P2PErrorCode.INVALID_RESPONSE,
      message: "header 0 is block 0, not 1",
    });
    await expect(
      client.request(id, Protocol.HEADERS_BY_HASH, [mined[0]!.hash]),
    ).rejects.toMatchObject({
      code: P2PErrorCode.FRAME_TOO_LARGE,
    });
    expect(faults.map((f) => [f.peer, f.protocol, f.direction, f.error.code])).toEqual([
      [server.peerId, Protocol.HEADERS_BY_RANGE, "outbound", P2PErrorCode.INVALID_RESPONSE],
      [server.peerId, Protocol.HEADERS_BY_HASH, "outbound", P2PErrorCode.FRAME_TOO_LARGE],
    ]);
  });
});
