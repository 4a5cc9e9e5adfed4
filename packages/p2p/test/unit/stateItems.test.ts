import { peerIdFromString } from "@libp2p/peer-id";
import { equalBytes, keccak256, rlpEncode } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { chainSourceOf } from "../../src/chainSource.js";
import { P2PErrorCode } from "../../src/errors.js";
import { FrameReader, writeFrame } from "../../src/framing.js";
import type { PeerFault } from "../../src/network.js";
import {
  FRAME_CAPS,
  MAX_STATE_ITEMS_PER_REQUEST,
  MAX_STATE_RESPONSE_BYTES,
  Protocol,
  protocolId,
  ResultCode,
} from "../../src/protocols.js";
import { chainWithBlocks, chainWithState, cleanUp, network, startNode } from "./helpers.js";

cleanUp();

/** A server over a chain with a state, a client at genesis, connected; faults on both sides. */
async function serverAndClient(serverOpts = {}) {
  const { chain, runtime, bigRuntime } = await chainWithState(20, 0);
  const { chain: empty } = await chainWithBlocks(0);
  const server = await startNode("127.0.0.2", await chainSourceOf(chain), serverOpts);
  const client = await startNode("127.0.0.3", await chainSourceOf(empty));
  const { id } = await client.dial(server.listenAddresses()[0]!);
  const serverFaults: PeerFault[] = [];
  server.onPeerFault((f) => serverFaults.push(f));
  return { chain, runtime, bigRuntime, server, client, peer: id, serverFaults };
}

/** Sends `payload` as a state items request on a raw stream: the first chunk of the answer. */
async function rawRequest(
  client: Awaited<ReturnType<typeof startNode>>,
  peer: string,
  payload: Uint8Array,
) {
  const stream = await client.libp2p.dialProtocol(
    peerIdFromString(peer),
    protocolId(network.chainId, Protocol.STATE_ITEMS),
  );
  await writeFrame(stream, payload);
  await stream.close();
  const reader = new FrameReader(stream);
  const answer = await reader.read(MAX_STATE_RESPONSE_BYTES + 1);
  reader.release();
  return answer;
}

describe("state items protocol", () => {
  it("serves trie nodes and code as the database holds them, empty for what it lacks", async () => {
    const { chain, runtime, client, peer } = await serverAndClient();
    const root = chain.head.block.header.stateRoot;
    const codeHash = keccak256(runtime);
    const unknown = new Uint8Array(32).fill(9);
    const asked = [
      { hash: root, code: false },
      { hash: unknown, code: false },
      { hash: codeHash, code: true },
      // The code's hash asked as a trie node: another key, not held.
      { hash: codeHash, code: false },
    ];
    const answer = await client.request(peer, Protocol.STATE_ITEMS, asked);
    const stored = await chain.stateItems(asked);
    expect(answer).toHaveLength(4);
    expect(answer[0]).toEqual(stored[0]);
    expect(keccak256(answer[0]!)).toEqual(root);
    expect(answer[1]).toEqual(new Uint8Array());
    expect(answer[2]).toEqual(runtime);
    expect(answer[3]).toEqual(new Uint8Array());
  });

  it("stops before the response byte bound, answering a prefix", async () => {
    const { chain, bigRuntime, client, peer } = await serverAndClient();
    const hash = keccak256(bigRuntime);
    expect(await chain.stateItems([{ hash, code: true }])).toEqual([bigRuntime]);
    // The large code asked over and over: the answer stops before it would pass the bound.
    const asked = Array.from({ length: MAX_STATE_ITEMS_PER_REQUEST }, () => ({ hash, code: true }));
    const answer = await client.request(peer, Protocol.STATE_ITEMS, asked);
    const fits = Math.floor(MAX_STATE_RESPONSE_BYTES / bigRuntime.length);
    expect(fits).toBeLessThan(MAX_STATE_ITEMS_PER_REQUEST);
    expect(answer).toHaveLength(fits);
    expect(answer.every((a) => equalBytes(a, bigRuntime))).toBe(true);
  });

  it("refuses a request over the item limit: before sending, and from a peer that sends one", async () => {
    const { chain, client, peer, serverFaults } = await serverAndClient();
    const root = { hash: chain.head.block.header.stateRoot, code: false };
    const tooMany = Array.from({ length: MAX_STATE_ITEMS_PER_REQUEST + 1 }, () => root);
    await expect(client.request(peer, Protocol.STATE_ITEMS, tooMany)).rejects.toMatchObject({
      code: P2PErrorCode.INVALID_REQUEST,
    });
    await expect(client.request(peer, Protocol.STATE_ITEMS, [])).rejects.toMatchObject({
      code: P2PErrorCode.INVALID_REQUEST,
    });
    expect(serverFaults).toEqual([]);
    // The same request written by hand reaches the server, which refuses it by its size
    // before reading it (385 items do not fit the request frame's cap); 384 do.
    const encode = (items: typeof tooMany) =>
      rlpEncode(items.map((item) => [new Uint8Array(), item.hash]));
    const answer = await rawRequest(client, peer, encode(tooMany));
    expect(answer?.[0]).toBe(ResultCode.INVALID_REQUEST);
    expect(new TextDecoder().decode(answer!.subarray(1))).toBe(
      `a frame of ${encode(tooMany).length} bytes is over the cap of ${FRAME_CAPS.state_items.request}`,
    );
    expect(serverFaults.map((f) => [f.peer, f.protocol, f.direction, f.error.code])).toEqual([
      [client.peerId, Protocol.STATE_ITEMS, "inbound", P2PErrorCode.FRAME_TOO_LARGE],
    ]);
    const most = await rawRequest(client, peer, encode(tooMany.slice(1)));
    expect(most?.[0]).toBe(ResultCode.OK);
  });

  it("answers a malformed request with INVALID_REQUEST and reports the sender", async () => {
    const { chain, server, client, peer, serverFaults } = await serverAndClient();
    const hash = chain.head.block.header.stateRoot;
    const cases: [Uint8Array, string][] = [
      [rlpEncode(hash), "invalid state items request: expected a list of [kind, hash]"],
      [rlpEncode([hash]), "invalid state items request: item 0 is not [kind, hash]"],
      [
        rlpEncode([
          [new Uint8Array(), hash],
          [Uint8Array.of(2), hash],
        ]),
        "invalid state items request: item 1 has kind 2, 0 (trie node) or 1 (code) allowed",
      ],
      [
        rlpEncode([[Uint8Array.of(1), hash.subarray(1)]]),
        "invalid state items request: the hash of item 0 is not 32 bytes",
      ],
      [
        rlpEncode([[Uint8Array.of(0), hash]]),
        "invalid state item 0 kind: integer has leading zero bytes",
      ],
      [
        rlpEncode([[new Uint8Array(), [hash]]]),
        "invalid state items request: the hash of item 0 is not 32 bytes",
      ],
      [Uint8Array.of(0xc5, 0x01), "invalid RLP"],
    ];
    for (const [payload, message] of cases) {
      const answer = await rawRequest(client, peer, payload);
      expect(answer?.[0]).toBe(ResultCode.INVALID_REQUEST);
      expect(new TextDecoder().decode(answer!.subarray(1))).toContain(message);
    }
    expect(serverFaults).toHaveLength(cases.length);
    expect(
      serverFaults.every(
        (f) =>
          f.peer === client.peerId &&
          f.protocol === Protocol.STATE_ITEMS &&
          f.direction === "inbound" &&
          f.error.code === P2PErrorCode.INVALID_REQUEST,
      ),
    ).toBe(true);
    // The connection is still usable.
    expect(server.peer(client.peerId)).toBeDefined();
    expect(await client.request(peer, Protocol.STATE_ITEMS, [{ hash, code: false }])).toHaveLength(
      1,
    );
  });

  it("counts the items asked against the peer's rate limit, 16 to a token", async () => {
    // 300 items cost 19 tokens: a second 300 go past 30, 150 more (10 tokens) do not.
    const { chain, client, peer, serverFaults } = await serverAndClient({
      rateLimit: { capacity: 30, refillPerSecond: 0.001 },
    });
    const root = { hash: chain.head.block.header.stateRoot, code: false };
    const ask = (n: number) =>
      client.request(
        peer,
        Protocol.STATE_ITEMS,
        Array.from({ length: n }, () => root),
      );
    expect(await ask(300)).toHaveLength(300);
    await expect(ask(300)).rejects.toMatchObject({ code: P2PErrorCode.RATE_LIMITED });
    expect(await ask(150)).toHaveLength(150);
    expect(serverFaults.map((f) => f.error.code)).toEqual([P2PErrorCode.RATE_LIMITED]);
  });

  it("refuses an answer with more items than asked, as a fault of the server", async () => {
    const { chain, server, client, peer } = await serverAndClient();
    const clientFaults: PeerFault[] = [];
    client.onPeerFault((f) => clientFaults.push(f));
    const id = protocolId(network.chainId, Protocol.STATE_ITEMS);
    // The server answers three items, whatever it is asked.
    await server.libp2p.unhandle(id);
    await server.libp2p.handle(id, async (stream) => {
      const reader = new FrameReader(stream);
      await reader.read(FRAME_CAPS.state_items.request);
      reader.release();
      for (let i = 0; i < 3; i++) await writeFrame(stream, Uint8Array.of(ResultCode.OK, i));
      await stream.close();
    });
    const root = { hash: chain.head.block.header.stateRoot, code: false };
    await expect(client.request(peer, Protocol.STATE_ITEMS, [root, root])).rejects.toMatchObject({
      code: P2PErrorCode.INVALID_RESPONSE,
      message: "state_items: more than the 2 items asked for",
    });
    expect(clientFaults.map((f) => [f.peer, f.protocol, f.direction, f.error.code])).toEqual([
      [server.peerId, Protocol.STATE_ITEMS, "outbound", P2PErrorCode.INVALID_RESPONSE],
    ]);
    // Three items for three asked is an answer.
    expect(await client.request(peer, Protocol.STATE_ITEMS, [root, root, root])).toEqual([
      Uint8Array.of(0),
      Uint8Array.of(1),
      Uint8Array.of(2),
    ]);
  });
});
