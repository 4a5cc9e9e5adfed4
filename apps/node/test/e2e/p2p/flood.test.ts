import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";

// A flooder below the peer identity: 300 connections of random bytes and 200 idle sockets from
// one loopback address, none of which ever becomes a peer. The node counts them against the
// address and bans it: the address is listed by sco_bannedAddresses, its later connections are
// closed at accept without a byte from the node, and sco_unbanAddress lets it in again. An
// honest node on another address connects and syncs meanwhile.
const FLOODER = "127.0.0.77";
const BYSTANDER = "127.0.0.78";
/** multistream-select's header, length-prefixed: the first thing a libp2p dialler sends. */
const MULTISTREAM = Buffer.from("\x13/multistream/1.0.0\n", "latin1");

let a: RunningNode;
let honest: RunningNode | undefined;
const sockets: Socket[] = [];

const args = (host: string) => [
  "--p2p-host",
  host,
  "--p2p-port",
  "0",
  "--rpc-modules",
  "eth,net,web3,rpc,evm,sco",
];

beforeAll(async () => {
  a = await startNode({ network: "--devnet", args: args("127.0.0.70") });
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([a?.stop(), honest?.stop()]);
});

function target(): { host: string; port: number } {
  const [, host, port] = /^\/ip4\/([^/]+)\/tcp\/(\d+)/.exec(p2pAddress(a))!;
  return { host: host!, port: Number(port) };
}

interface Outcome {
  /** Bytes the node sent before the socket closed. */
  readonly bytes: number;
}

/**
 * A raw TCP connection from `from` that sends `data` (nothing for an idle socket) once
 * connected; resolves when it is closed, with what the node sent. A reset before the connect
 * completes counts as closed with nothing sent.
 */
function open(
  from: string,
  data?: Uint8Array,
  onData?: (socket: Socket) => void,
): Promise<Outcome> {
  return new Promise((resolve) => {
    let bytes = 0;
    const socket = connect({ ...target(), localAddress: from }, () => {
      if (data !== undefined) socket.write(data);
    });
    sockets.push(socket);
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      onData?.(socket);
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve({ bytes }));
  });
}

/** Whether a connection from `from` that sends the multistream header gets it echoed. */
async function answered(from: string): Promise<boolean> {
  const { bytes } = await open(from, MULTISTREAM, (socket) => socket.destroy());
  return bytes > 0;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a flooder of failed connections", () => {
  it("is banned by address, refused at accept, and can be unbanned; an honest node still syncs", async () => {
    // Before the flood the node answers a libp2p dialler from that address.
    expect(await answered(FLOODER)).toBe(true);

    // 300 connections of random bytes and 200 idle sockets, opened a few at a time.
    const flood: Promise<Outcome>[] = [];
    for (let i = 0; i < 500; i++) {
      flood.push(open(FLOODER, i % 5 < 3 ? randomBytes(1 + (i % 200)) : undefined));
      if (i % 10 === 9) await pause(20);
    }
    const banned = await until("the flooder's ban", async () => {
      const list = (await rpc(a, "sco_bannedAddresses")) as string[];
      return list.includes(FLOODER) ? list : undefined;
    });
    expect(banned).toEqual([FLOODER]);
    // Every flood socket is closed by the node, and none got a byte.
    const outcomes = await until("the flood sockets to close", async () => {
      const settled = await Promise.race([Promise.all(flood), pause(200).then(() => undefined)]);
      return settled;
    });
    expect(outcomes).toHaveLength(500);
    expect(outcomes.reduce((sum, o) => sum + o.bytes, 0)).toBe(0);

    const records = (await rpc(a, "sco_peerList")) as Record<string, unknown>[];
    const record = records.find((r) => r.type === "address" && r.id === FLOODER);
    expect(record).toMatchObject({ goodReputation: false, punishments: 1 });
    expect(record!.failedHandshakes as number).toBeGreaterThanOrEqual(10);
    expect(record!.score as number).toBeLessThanOrEqual(-10);
    expect(record!.punishedUntil as number).toBeGreaterThan(0);
    expect(a.logs()).toContain('"msg":"Banning address: failed connections"');

    // Banned: a later connection is closed without a byte, though it speaks multistream-select;
    // another address is answered.
    expect(await answered(FLOODER)).toBe(false);
    expect(await answered(BYSTANDER)).toBe(true);

    // An honest node on another address connects and syncs.
    honest = await startNode({
      network: "--devnet",
      args: [...args("127.0.0.71"), "--no-automine", "--bootnodes", p2pAddress(a)],
    });
    await rpc(a, "evm_mine");
    await rpc(a, "evm_mine");
    const latest = (await rpc(a, "eth_getBlockByNumber", ["latest", false])) as { hash: string };
    await until("the honest node to sync", async () => {
      const h = (await rpc(honest!, "eth_getBlockByNumber", ["latest", false])) as {
        hash: string;
      };
      return h.hash === latest.hash ? true : undefined;
    });
    expect(await rpc(a, "net_peerCount")).toBe("0x1");
    expect(await rpc(a, "sco_bannedAddresses")).toEqual([FLOODER]);

    // The operator lifts the ban: the address is answered again.
    expect(await rpc(a, "sco_unbanAddress", [FLOODER])).toBeNull();
    expect(await rpc(a, "sco_bannedAddresses")).toEqual([]);
    await until("an answer to the unbanned address", async () =>
      (await answered(FLOODER)) ? true : undefined,
    );
  }, 120_000);
});
