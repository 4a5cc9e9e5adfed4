import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "@nodex/types";
import { describe, expect, it } from "vitest";
import type { ConnectionFailure } from "../../src/network.js";
import {
  ADDRESS_PUNISHMENT,
  FAILED_CONNECTION_LIMIT,
  FailureWindow,
  loadBans,
  MAX_ADDRESS_RECORDS,
  PeerEvent,
  PeerScoring,
  punishmentDuration,
  saveBans,
} from "../../src/scoring/index.js";
import { cleanUp, emptySource, eventually, startNode } from "./helpers.js";

cleanUp();

const MIN = 60_000;

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("FailureWindow", () => {
  it("counts the failures of a key within the window, at most max of them", () => {
    const w = new FailureWindow(3, 1_000);
    expect(w.add("a", 0)).toBe(1);
    expect(w.add("a", 500)).toBe(2);
    expect(w.add("b", 500)).toBe(1);
    // The first has left the window.
    expect(w.add("a", 1_200)).toBe(2);
    expect(w.add("a", 1_300)).toBe(3);
    expect(w.add("a", 1_400)).toBe(3);
    expect(w.count("a", 2_350)).toBe(1);
    w.clear("a");
    expect(w.count("a", 2_350)).toBe(0);
  });

  it("forgets the key that failed longest ago past its capacity", () => {
    const w = new FailureWindow(5, 10_000, 2);
    w.add("a", 0);
    w.add("b", 1);
    w.add("a", 2);
    w.add("c", 3);
    expect(w.size).toBe(2);
    expect(w.count("b", 3)).toBe(0);
    expect(w.count("a", 3)).toBe(2);
  });

  it("refuses a limit or window below 1", () => {
    expect(() => new FailureWindow(0, 1_000)).toThrow(RangeError);
    expect(() => new FailureWindow(3, 0)).toThrow(RangeError);
  });
});

describe("failed connections against an address", () => {
  it("score as invalid events and ban at the limit within the window, not before", () => {
    const c = clock();
    const s = new PeerScoring({ now: c.now, failedConnections: { max: 3, windowMs: MIN } });
    s.record(undefined, "127.0.0.9", PeerEvent.VALID_BLOCK);
    expect(s.failedConnection("127.0.0.9")).toEqual({ punished: false, failures: 1 });
    c.advance(MIN / 2);
    expect(s.failedConnection("127.0.0.9")).toEqual({ punished: false, failures: 2 });
    expect(s.isBanned("127.0.0.9")).toBe(false);
    const record = () => s.peerList().find((r) => r.id === "127.0.0.9");
    // A positive score clamps to 0 and loses 1, then 1 more.
    expect(record()).toMatchObject({ failedHandshakes: 2, score: -2, goodReputation: true });
    // One failure leaves the window before the third: no ban yet.
    c.advance(MIN / 2 + 1);
    expect(s.failedConnection("127.0.0.9")).toEqual({ punished: false, failures: 2 });
    const outcome = s.failedConnection("127.0.0.9");
    expect(outcome).toEqual({
      punished: true,
      started: true,
      failures: 3,
      until: c.now() + 12 * MIN,
    });
    expect(s.isBanned("127.0.0.9")).toBe(true);
    expect(s.isBanned("127.0.0.10")).toBe(false);
    expect(record()).toMatchObject({ goodReputation: false, punishments: 1 });
    // A failure while banned does not start another ban.
    expect(s.failedConnection("127.0.0.9")).toMatchObject({ punished: true, started: false });
  });

  it("ban for 12 minutes, 10 % longer each repeat, at most 6,000 minutes", () => {
    const c = clock();
    const s = new PeerScoring({ now: c.now, failedConnections: { max: 2, windowMs: MIN } });
    for (let n = 0; n < 70; n++) {
      s.failedConnection("10.1.2.3");
      const { until } = s.failedConnection("10.1.2.3");
      const expected = punishmentDuration(ADDRESS_PUNISHMENT, n);
      expect(until).toBe(c.now() + expected);
      c.advance(expected);
      expect(s.isBanned("10.1.2.3")).toBe(false);
    }
    expect(punishmentDuration(ADDRESS_PUNISHMENT, 1)).toBe(Math.round(12 * MIN * 1.1));
    expect(punishmentDuration(ADDRESS_PUNISHMENT, 64)).toBeLessThan(6000 * MIN);
    expect(punishmentDuration(ADDRESS_PUNISHMENT, 69)).toBe(6000 * MIN);
  });

  it("are listed by sco_bannedAddresses, lifted by sco_unbanAddress, and kept across restarts", () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-bans-"));
    try {
      const path = join(dir, "bans.json");
      const c = clock();
      const opts = {
        now: c.now,
        failedConnections: { max: 2, windowMs: MIN },
        onBansChanged: (st: Parameters<typeof saveBans>[1]) => saveBans(path, st),
      };
      const s = new PeerScoring(opts);
      s.ban("127.0.0.5");
      s.ban("10.0.0.0/8");
      s.failedConnection("::ffff:127.0.0.9");
      s.failedConnection("127.0.0.9");
      // A peer punished for bad reputation is not listed, as the reference node lists bans.
      s.record("n", "127.0.0.6", PeerEvent.INVALID_BLOCK);
      expect(s.bannedAddresses()).toEqual(["127.0.0.5", "127.0.0.9", "10.0.0.0/8"]);
      expect(loadBans(path, nullLogger).punished).toEqual([
        { address: "127.0.0.9", until: c.now() + 12 * MIN, punishments: 1, reason: "connections" },
        { address: "127.0.0.6", until: c.now() + 12 * MIN, punishments: 1 },
      ]);

      const again = new PeerScoring(opts, loadBans(path, nullLogger));
      expect(again.bannedAddresses()).toEqual(["127.0.0.5", "127.0.0.9", "10.0.0.0/8"]);
      expect(again.isBanned("127.0.0.9")).toBe(true);
      expect(again.unban("127.0.0.9")).toBe(true);
      expect(again.isBanned("127.0.0.9")).toBe(false);
      expect(again.bannedAddresses()).toEqual(["127.0.0.5", "10.0.0.0/8"]);
      // Lifted: the count starts anew, one failure does not ban again.
      expect(again.failedConnection("127.0.0.9")).toEqual({ punished: false, failures: 1 });
      expect(loadBans(path, nullLogger).punished.map((p) => p.address)).toEqual(["127.0.0.6"]);
      // An unban does not lift a reputation punishment.
      again.unban("127.0.0.6");
      expect(again.isBanned("127.0.0.6")).toBe(true);

      c.advance(12 * MIN);
      expect(s.bannedAddresses()).toEqual(["127.0.0.5", "10.0.0.0/8"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keep at most MAX_ADDRESS_RECORDS address records, forgetting unpunished ones first", () => {
    const s = new PeerScoring({ failedConnections: { max: 2, windowMs: MIN } });
    s.failedConnection("10.9.9.9");
    s.failedConnection("10.9.9.9");
    for (let i = 0; i < MAX_ADDRESS_RECORDS + 5; i++)
      s.failedConnection(`10.0.${i >> 8}.${i & 255}`);
    const addresses = s.peerList().filter((r) => r.type === "address");
    expect(addresses).toHaveLength(MAX_ADDRESS_RECORDS);
    // The banned one is kept, the oldest unbanned ones are gone.
    expect(s.isBanned("10.9.9.9")).toBe(true);
    expect(addresses.some((r) => r.id === "10.0.0.0")).toBe(false);
    expect(addresses.some((r) => r.id === "10.0.39.20")).toBe(true);
  });

  it("default to 10 within a minute", () => {
    expect(FAILED_CONNECTION_LIMIT).toEqual({ max: 10, windowMs: MIN });
    const s = new PeerScoring();
    for (let i = 0; i < 9; i++) expect(s.failedConnection("127.0.0.9").punished).toBe(false);
    expect(s.failedConnection("127.0.0.9").started).toBe(true);
  });
});

/** A raw TCP connection from `from` to the node's listening address. */
function rawSocket(node: { listenAddresses(): string[] }, from: string): Promise<Socket> {
  const [, host, port] = /^\/ip4\/([^/]+)\/tcp\/(\d+)/.exec(node.listenAddresses()[0]!)!;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: host!, port: Number(port), localAddress: from }, () =>
      resolve(socket),
    );
    socket.on("error", reject);
  });
}

/** Resolves with the bytes the node sent when it closes the socket. */
function closed(socket: Socket): Promise<number> {
  let bytes = 0;
  socket.on("data", (d: Buffer) => (bytes += d.length));
  socket.removeAllListeners("error");
  socket.on("error", () => {});
  return new Promise((resolve) => socket.once("close", () => resolve(bytes)));
}

const MULTISTREAM = Buffer.from("\x13/multistream/1.0.0\n", "latin1");

describe("P2PNetwork reports inbound connections that never become peers", () => {
  it("by stage: garbage, a failed noise handshake, silence, a close before the status", async () => {
    const a = await startNode("127.0.0.2", emptySource(), { statusTimeoutMs: 1_000 });
    const failures: ConnectionFailure[] = [];
    a.onConnectionFailure((f) => failures.push(f));

    const garbage = await rawSocket(a, "127.0.0.31");
    const garbageClosed = closed(garbage);
    garbage.write(Buffer.from([0xff, 0x00, 0x13, 0x37, 0x42, 0x99, 0x01, 0x02, 0x03, 0x04]));
    expect(await garbageClosed).toBe(0);
    await eventually(() => failures.length === 1, "the garbage connection's failure");
    expect(failures[0]).toMatchObject({ address: "127.0.0.31", stage: "encryption" });
    expect(failures[0]!.remoteAddress).toMatch(/^\/ip4\/127\.0\.0\.31\/tcp\/\d+$/);

    // Multistream-select agrees on noise, then the handshake is garbage.
    const noise = await rawSocket(a, "127.0.0.32");
    const noiseClosed = closed(noise);
    noise.write(Buffer.concat([MULTISTREAM, Buffer.from("\x07/noise\n", "latin1")]));
    noise.write(Buffer.concat([Buffer.from([0x00, 0x20]), Buffer.alloc(32, 0xab)]));
    expect(await noiseClosed).toBeGreaterThan(0); // the multistream answers, then the close
    await eventually(() => failures.length === 2, "the noise connection's failure");
    expect(failures[1]).toMatchObject({ address: "127.0.0.32", stage: "encryption" });

    const idle = await rawSocket(a, "127.0.0.33");
    expect(await closed(idle)).toBe(0);
    await eventually(() => failures.length === 3, "the idle connection's failure");
    expect(failures[2]).toMatchObject({
      address: "127.0.0.33",
      stage: "encryption",
      reason: "no encryption within 1000 ms",
    });

    // A node of another network: upgraded, then it hangs up without a status.
    const other = await startNode("127.0.0.34", emptySource(), { networkId: 34 });
    await expect(other.dial(a.listenAddresses()[0]!)).rejects.toBeDefined();
    await eventually(() => failures.length === 4, "the other network's failure");
    expect(failures[3]).toMatchObject({ address: "127.0.0.34", stage: "status" });

    // An honest peer is no failure.
    const honest = await startNode("127.0.0.35", emptySource());
    await honest.dial(a.listenAddresses()[0]!);
    await new Promise((r) => setTimeout(r, 200));
    expect(failures.map((f) => f.address)).not.toContain("127.0.0.35");
    expect(failures).toHaveLength(4);
  });

  it("refuses an address more connections waiting for their handshakes than its share", async () => {
    const a = await startNode("127.0.0.2", emptySource(), { statusTimeoutMs: 20_000 });
    const failures: ConnectionFailure[] = [];
    a.onConnectionFailure((f) => failures.push(f));
    // Two idle sockets wait; the third is refused at once and counted.
    const idle = [await rawSocket(a, "127.0.0.37"), await rawSocket(a, "127.0.0.37")];
    const third = await new Promise<number>((resolve) => {
      const [, host, port] = /^\/ip4\/([^/]+)\/tcp\/(\d+)/.exec(a.listenAddresses()[0]!)!;
      const socket = connect({ host: host!, port: Number(port), localAddress: "127.0.0.37" });
      void closed(socket).then(resolve);
    });
    expect(third).toBe(0);
    await eventually(() => failures.length === 1, "the refusal's failure");
    expect(failures[0]).toMatchObject({
      address: "127.0.0.37",
      stage: "accept",
      reason: "2 connections from the address already waiting for their handshakes",
    });
    // Another address is not held up by them: it completes its handshake.
    const honest = await startNode("127.0.0.38", emptySource());
    await honest.dial(a.listenAddresses()[0]!);
    for (const s of idle) s.destroy();
    await eventually(() => failures.length === 3, "the idle sockets' failures");
    expect(failures.map((f) => f.address)).not.toContain("127.0.0.38");
  });

  it("refuses a banned address at accept without a byte, and drops its pending connections", async () => {
    const banned = new Set<string>();
    const a = await startNode(
      "127.0.0.2",
      emptySource(),
      { statusTimeoutMs: 20_000 },
      { isBanned: (ip) => banned.has(ip) },
    );
    const failures: ConnectionFailure[] = [];
    a.onConnectionFailure((f) => failures.push(f));
    const waiting = await rawSocket(a, "127.0.0.36");
    const waitingClosed = closed(waiting);
    // Not banned: the node answers the multistream header.
    const first = await rawSocket(a, "127.0.0.36");
    const answer = new Promise<Buffer>((resolve) => first.once("data", resolve));
    first.write(MULTISTREAM);
    expect((await answer).toString("latin1")).toBe(MULTISTREAM.toString("latin1"));
    first.destroy();

    banned.add("127.0.0.36");
    await eventually(() => failures.length === 1, "the first connection's failure");
    expect(a.dropPending("127.0.0.36")).toBe(1);
    expect(await waitingClosed).toBe(0);

    // Refused at once: the reset may even come before the connect completes here.
    const later = await new Promise<number>((resolve) => {
      const [, host, port] = /^\/ip4\/([^/]+)\/tcp\/(\d+)/.exec(a.listenAddresses()[0]!)!;
      const socket = connect({ host: host!, port: Number(port), localAddress: "127.0.0.36" }, () =>
        socket.write(MULTISTREAM),
      );
      void closed(socket).then(resolve);
    });
    expect(later).toBe(0);
  });
});
