import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import {
  ADDRESS_PUNISHMENT,
  type BanState,
  loadBans,
  NODE_PUNISHMENT,
  PeerEvent,
  PeerScoring,
  parseAddressBlock,
  punishmentDuration,
  saveBans,
} from "../../src/scoring/index.js";

const MIN = 60_000;

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("scores", () => {
  it("valid events add 1 while the score is not negative; invalid ones clamp to 0 and subtract 1", () => {
    const s = new PeerScoring();
    s.record("a", undefined, PeerEvent.VALID_BLOCK);
    s.record("a", undefined, PeerEvent.VALID_TRANSACTION);
    s.record("a", undefined, PeerEvent.SUCCESSFUL_HANDSHAKE);
    expect(s.peerList()[0]).toMatchObject({
      id: "a",
      type: "node",
      score: 2,
      goodReputation: true,
    });
    s.record("a", undefined, PeerEvent.INVALID_TRANSACTION);
    expect(s.peerList()[0]).toMatchObject({
      score: -1,
      goodReputation: true,
      invalidTransactions: 1,
    });
    s.record("a", undefined, PeerEvent.VALID_BLOCK);
    expect(s.peerList()[0]).toMatchObject({ score: -1, validBlocks: 2 });
    s.record("a", undefined, PeerEvent.TIMEOUT_MESSAGE);
    s.record("a", undefined, PeerEvent.REPEATED_MESSAGE);
    expect(s.peerList()[0]).toMatchObject({ score: -1, timeoutMessages: 1, repeatedMessages: 1 });
  });

  it("an invalid block, message or header punishes node and address: 12 min, then 10 % longer", () => {
    const c = clock();
    const s = new PeerScoring({ now: c.now });
    const first = s.record("n1", "127.0.0.9", PeerEvent.INVALID_BLOCK);
    expect(first).toEqual({ punished: true, until: c.now() + 12 * MIN, started: true });
    expect(s.hasGoodReputation("n1", "127.0.0.9")).toBe(false);
    expect(s.isBanned("127.0.0.9")).toBe(true);
    expect(s.isBanned("::ffff:127.0.0.9")).toBe(true);
    expect(s.isBanned("127.0.0.8")).toBe(false);
    c.advance(12 * MIN);
    expect(s.isBanned("127.0.0.9")).toBe(false);
    expect(s.hasGoodReputation("n1", "127.0.0.9")).toBe(true);
    expect(s.peerList()[0]).toMatchObject({
      score: 0,
      invalidBlocks: 0,
      punishments: 1,
      punishedUntil: 0,
    });
    const second = s.record("n1", "127.0.0.9", PeerEvent.INVALID_HEADER);
    expect(second.until).toBe(c.now() + 13.2 * MIN);
  });

  it("durations grow by 10 % per repeat; addresses stop at 6,000 minutes, nodes never", () => {
    expect(punishmentDuration(NODE_PUNISHMENT, 0)).toBe(12 * MIN);
    expect(punishmentDuration(NODE_PUNISHMENT, 2)).toBe(Math.round(12 * MIN * 1.21));
    expect(punishmentDuration(ADDRESS_PUNISHMENT, 100)).toBe(6000 * MIN);
    expect(punishmentDuration(NODE_PUNISHMENT, 100)).toBeGreaterThan(6000 * MIN);
  });

  it("sums node records for sco_reputationSummary", () => {
    const s = new PeerScoring();
    s.record("a", "10.0.0.1", PeerEvent.VALID_BLOCK);
    s.record("b", "10.0.0.2", PeerEvent.INVALID_MESSAGE);
    expect(s.summary()).toMatchObject({
      count: 2,
      validBlocks: 1,
      invalidMessages: 1,
      peersTotalScore: 0,
      punishments: 1,
      goodReputationCount: 1,
      badReputationCount: 1,
    });
    expect(s.peerList().map((r) => [r.type, r.id])).toEqual([
      ["node", "a"],
      ["node", "b"],
      ["address", "10.0.0.1"],
      ["address", "10.0.0.2"],
    ]);
  });
});

describe("bans by hand", () => {
  it("take addresses and CIDR blocks, list single ones first, and refuse anything else", () => {
    const s = new PeerScoring();
    expect(s.ban("10.0.0.0/8")).toBe(true);
    expect(s.ban("192.168.1.7")).toBe(true);
    expect(s.ban("fd00::/8")).toBe(true);
    expect(s.ban("not an address")).toBe(false);
    expect(s.ban("10.0.0.1/33")).toBe(false);
    expect(s.bannedAddresses()).toEqual(["192.168.1.7", "10.0.0.0/8", "fd00::/8"]);
    expect(s.isBanned("10.200.3.4")).toBe(true);
    expect(s.isBanned("fd12::1")).toBe(true);
    expect(s.isBanned("11.0.0.1")).toBe(false);
    expect(s.unban("10.0.0.0/8")).toBe(true);
    expect(s.isBanned("10.200.3.4")).toBe(false);
    expect(parseAddressBlock("::ffff:1.2.3.4")?.text).toBe("1.2.3.4");
  });
});

describe("the ban list on disk", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const file = () => {
    const d = mkdtempSync(join(tmpdir(), "nodex-bans-"));
    dirs.push(d);
    return join(d, "bans.json");
  };

  it("keeps manual bans and running punishments across a restart, not expired ones", () => {
    const path = file();
    const c = clock();
    const saved: BanState[] = [];
    const s = new PeerScoring({
      now: c.now,
      onBansChanged: (st) => {
        saved.push(st);
        saveBans(path, st);
      },
    });
    s.ban("127.0.0.5");
    s.record("n", "127.0.0.6", PeerEvent.INVALID_BLOCK);
    expect(saved).toHaveLength(2);
    expect((statSync(path).mode & 0o777).toString(8)).toBe("600");
    const again = new PeerScoring({ now: c.now }, loadBans(path, nullLogger));
    expect(again.isBanned("127.0.0.5")).toBe(true);
    expect(again.isBanned("127.0.0.6")).toBe(true);
    c.advance(12 * MIN);
    const later = new PeerScoring({ now: c.now }, loadBans(path, nullLogger));
    expect(later.isBanned("127.0.0.5")).toBe(true);
    expect(later.isBanned("127.0.0.6")).toBe(false);
  });

  it("reads a missing file as no bans, and sets an unreadable one aside with a warning", () => {
    const path = file();
    expect(loadBans(path, nullLogger)).toEqual({ manual: [], punished: [] });
    writeFileSync(path, "{ not json");
    const warnings: unknown[] = [];
    const logger = { ...nullLogger, warn: (m: string, meta: unknown) => warnings.push([m, meta]) };
    expect(loadBans(path, logger)).toEqual({ manual: [], punished: [] });
    expect(readFileSync(`${path}.corrupt`, "utf8")).toBe("{ not json");
    expect(warnings).toHaveLength(1);
    writeFileSync(path, JSON.stringify({ manual: [1], punished: [] }));
    expect(loadBans(path, logger)).toEqual({ manual: [], punished: [] });
    expect(warnings).toHaveLength(2);
  });
});
