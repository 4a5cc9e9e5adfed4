import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RLP } from "@ethereumjs/rlp";
import { type Address, bytesToHex, hexToBytes, keccak256 } from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Bucket,
  Database,
  dumpState,
  EMPTY_TRIE_ROOT,
  NodeStore,
  readStateItems,
  type StateItem,
  StateSync,
  WorldState,
} from "../../../src/index.js";

/** A deterministic generator (mulberry32), so that every run builds and syncs the same. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const address = (n: number) => hexToBytes(`0x${n.toString(16).padStart(40, "0")}`) as Address;
const slot = (n: number) => hexToBytes(`0x${n.toString(16).padStart(64, "0")}`);

function randomBytes(random: () => number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(random() * 256);
  return out;
}

/** A storage value as the trie keeps it: no leading zero byte. */
function word(random: () => number): Uint8Array {
  const value = randomBytes(random, 1 + Math.floor(random() * 32));
  value[0] = 1 + Math.floor(random() * 255);
  return value;
}

/**
 * Two slots whose keccak256 hashes share their first 8 nibbles: in a storage trie of their own,
 * their leaves sit under a branch 8 nibbles deep with 55 nibbles of path left, and a leaf with a
 * one-byte value is then under 32 bytes: embedded in the branch (found by a birthday search).
 */
function collidingSlots(): [Uint8Array, Uint8Array] {
  const byPrefix = new Map<number, number>();
  for (let n = 0; ; n++) {
    const h = keccak256(slot(n));
    const prefix = ((h[0]! << 24) | (h[1]! << 16) | (h[2]! << 8) | h[3]!) >>> 0;
    const other = byPrefix.get(prefix);
    if (other !== undefined) return [slot(other), slot(n)];
    byPrefix.set(prefix, n);
  }
}

interface AccountModel {
  balance: bigint;
  code: Uint8Array;
  storage: Map<string, Uint8Array>;
}
type Model = Map<number, AccountModel>;

const ACCOUNTS = 2000;
const SHARED = [3001, 3002, 3003, 3004, 3005, 3006];
const EMBEDDED = 3100;

/**
 * The accounts of a source state: `accounts` plain accounts, `contracts` of them with code of
 * varied sizes and storage tries of 1 to 300 slots, accounts sharing one code and one storage
 * trie, and an account whose storage trie has embedded nodes.
 */
function sourceModel(accounts: number, contracts: number, seed: number): Model {
  const random = prng(seed);
  const model: Model = new Map();
  for (let i = 1; i <= accounts; i++)
    model.set(i, { balance: BigInt(i) * 7n + 1n, code: new Uint8Array(), storage: new Map() });
  const slotCounts = [1, 2, 3, 10, 40, 300];
  for (let c = 0; c < contracts; c++) {
    const account = model.get(1 + ((c * 37) % accounts))!;
    account.code = randomBytes(random, 1 + ((c * 977) % 6000));
    for (let s = 0; s < slotCounts[c % slotCounts.length]!; s++)
      account.storage.set(bytesToHex(slot(s * 13 + c)), word(random));
  }
  const code = randomBytes(random, 700);
  const storage = new Map<string, Uint8Array>();
  for (let s = 0; s < 20; s++) storage.set(bytesToHex(slot(s)), word(random));
  for (const n of SHARED) model.set(n, { balance: BigInt(n), code, storage: new Map(storage) });
  const [a, b] = EMBEDDED_SLOTS;
  model.set(EMBEDDED, {
    balance: 1n,
    code: new Uint8Array(),
    storage: new Map([
      [bytesToHex(a), Uint8Array.of(1)],
      [bytesToHex(b), Uint8Array.of(2)],
    ]),
  });
  return model;
}

const EMBEDDED_SLOTS = collidingSlots();

/** The source after a block: some balances and slots changed, one account new. */
function changedModel(model: Model): Model {
  const next: Model = new Map();
  for (const [n, account] of model) next.set(n, { ...account, storage: new Map(account.storage) });
  const contracts = [...next.values()].filter((a) => a.storage.size > 0 && a.code.length > 0);
  for (let i = 5; i <= next.size; i += 211) {
    const account = next.get(i);
    if (account !== undefined) account.balance += 1000n;
  }
  contracts[0]!.storage.set(bytesToHex(slot(99_999)), Uint8Array.of(0x42));
  contracts[5]!.storage.set(bytesToHex(slot(5)), Uint8Array.of(0x43, 0x44));
  next.get(SHARED[0]!)!.storage.set(bytesToHex(slot(1)), Uint8Array.of(0x45));
  next.set(9999, { balance: 5n, code: Uint8Array.of(0x60, 0x00), storage: new Map() });
  return next;
}

/**
 * Writes `model` into `db` as a block would, over the state at `root` whose model is `before`
 * (only what differs is written); returns the new root.
 */
async function writeModel(
  db: Database,
  model: Model,
  root?: Uint8Array,
  before: Model = new Map(),
): Promise<Uint8Array> {
  const store = new NodeStore(db);
  const state = await WorldState.open(store, root);
  for (const [n, account] of model) {
    const a = address(n);
    const old = before.get(n);
    if (old?.balance !== account.balance) await state.setBalance(a, account.balance);
    if (account.code.length > 0 && old === undefined) await state.setCode(a, account.code);
    for (const [s, value] of account.storage)
      if (old?.storage.get(s) !== value) await state.setStorage(a, hexToBytes(s), value);
  }
  const next = await state.commit();
  await db.write(store.takeWrites());
  store.confirmWrites();
  return next;
}

/** Reads the model's contracts and one plain account in five from the state at `root`. */
async function readModel(db: Database, model: Model, root: Uint8Array): Promise<void> {
  const state = await WorldState.open(new NodeStore(db), root);
  for (const [n, account] of model) {
    if (account.code.length === 0 && account.storage.size === 0 && n % 5 !== 0) continue;
    const a = address(n);
    expect(await state.getBalance(a)).toBe(account.balance);
    expect(bytesToHex(await state.getCode(a))).toBe(bytesToHex(account.code));
    for (const [s, value] of account.storage) {
      const padded = new Uint8Array(32);
      padded.set(value, 32 - value.length);
      expect(bytesToHex(await state.getStorage(a, hexToBytes(s)))).toBe(bytesToHex(padded));
    }
  }
}

/** The state at `root` as sorted hex: the same nodes and codes, whatever the walk's order. */
async function dumpOf(
  db: Database,
  root: Uint8Array,
): Promise<{ nodes: string[]; codes: string[] }> {
  const dump = await dumpState(db, root);
  return { nodes: dump.nodes.map(bytesToHex).sort(), codes: dump.codes.map(bytesToHex).sort() };
}

async function trieKeyCount(db: Database): Promise<number> {
  let count = 0;
  for await (const _ of db.keys(Bucket.TRIE)) count++;
  return count;
}

let dir: string;
let source: Database;
let model1: Model;
let model2: Model;
let root1: Uint8Array;
let root2: Uint8Array;
let dump1: { nodes: string[]; codes: string[] };
let dump2: { nodes: string[]; codes: string[] };
/** A smaller state and its successor, for the seeded cases. */
let small: { model: Model; root: Uint8Array; dump: { nodes: string[]; codes: string[] } }[];
let targets = 0;

async function freshTarget(): Promise<Database> {
  return Database.open(join(dir, `target-${targets++}`));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-state-sync-"));
  source = await Database.open(join(dir, "source"));
  model1 = sourceModel(ACCOUNTS, 36, 7);
  root1 = await writeModel(source, model1);
  model2 = changedModel(model1);
  root2 = await writeModel(source, model2, root1, model1);
  dump1 = await dumpOf(source, root1);
  dump2 = await dumpOf(source, root2);
  const smallModel = sourceModel(300, 5, 11);
  const smallRoot = await writeModel(source, smallModel);
  const nextModel = changedModel(smallModel);
  const nextRoot = await writeModel(source, nextModel, smallRoot, smallModel);
  small = [
    { model: smallModel, root: smallRoot, dump: await dumpOf(source, smallRoot) },
    { model: nextModel, root: nextRoot, dump: await dumpOf(source, nextRoot) },
  ];
}, 60_000);

afterAll(async () => {
  await source?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Takes `size` items at a time and answers them from the source until the sync is done (or
 * for `rounds` rounds); returns the rounds and the answers written.
 */
async function finish(
  sync: StateSync,
  opts: { size?: number; maxBytes?: number; rounds?: number } = {},
): Promise<{ rounds: number; written: number }> {
  let rounds = 0;
  let written = 0;
  while (!sync.done && rounds < (opts.rounds ?? Number.POSITIVE_INFINITY)) {
    if (++rounds > 100_000) throw new Error("the sync does not end");
    const items = sync.take(opts.size ?? 64);
    const answers = await readStateItems(source, items, opts.maxBytes);
    const result = await sync.deliver(items, answers);
    if (!result.ok) throw new Error(result.reason);
    written += result.written;
  }
  return { rounds, written };
}

describe("StateSync", () => {
  it("the source state has what the sync must handle", () => {
    // Shared storage trie and code, and a storage trie with embedded nodes.
    const decoded = dump1.nodes.map((hex) => RLP.decode(hexToBytes(hex)) as unknown[]);
    expect(decoded.some((node) => node.some((child) => Array.isArray(child)))).toBe(true);
    expect(dump1.codes.length).toBe(36 + 1);
    expect(dump1.nodes.length).toBeGreaterThan(ACCOUNTS);
  });

  it("downloads a whole state into an empty database, answers bounded in bytes", async () => {
    const target = await freshTarget();
    try {
      const sync = await StateSync.open(target, root1);
      expect(sync.done).toBe(false);
      expect(sync.progress()).toMatchObject({ pending: 1, nodes: 0, bytes: 0 });
      const [first] = sync.take(10);
      expect(first).toEqual({ hash: root1, kind: "account", code: false });
      sync.release([first!]);
      const { written } = await finish(sync, { size: 48, maxBytes: 4096 });
      // Each item asked for once: the shared storage trie and code too.
      expect(written).toBe(dump1.nodes.length + dump1.codes.length);
      expect(await dumpOf(target, root1)).toEqual(dump1);
      // Nothing beyond the state: every key written is a node or code of it.
      expect(await trieKeyCount(target)).toBe(dump1.nodes.length + dump1.codes.length);
      const bytes = [...dump1.nodes, ...dump1.codes].reduce(
        (n, hex) => n + (hex.length - 2) / 2,
        0,
      );
      const slots = [...model1.values()].reduce((n, a) => n + a.storage.size, 0);
      expect(sync.progress()).toEqual({
        accounts: model1.size,
        // The shared storage trie counts once.
        slots: slots - (SHARED.length - 1) * 20,
        nodes: dump1.nodes.length,
        codes: dump1.codes.length,
        bytes,
        pending: 0,
        inFlight: 0,
      });
      await readModel(target, model1, root1);
    } finally {
      await target.close();
    }
  });

  it("resumes after a restart from what the database holds", async () => {
    const target = await freshTarget();
    try {
      const first = await StateSync.open(target, root1);
      await finish(first, { size: 40, rounds: 60 });
      expect(first.done).toBe(false);
      const before = first.progress();
      // Dropped with items taken and not answered: nothing of them is remembered.
      first.take(30);
      const held = await trieKeyCount(target);

      const second = await StateSync.open(target, root1);
      const reopened = second.progress();
      expect(reopened.nodes + reopened.codes).toBe(held);
      expect(reopened).toMatchObject({
        accounts: before.accounts,
        slots: before.slots,
        bytes: 0,
        inFlight: 0,
      });
      expect(reopened.pending).toBeGreaterThan(0);
      const { written } = await finish(second, { size: 40 });
      expect(written).toBe(dump1.nodes.length + dump1.codes.length - held);
      expect(await dumpOf(target, root1)).toEqual(dump1);
      expect(await trieKeyCount(target)).toBe(dump1.nodes.length + dump1.codes.length);
      expect(second.progress()).toMatchObject({
        accounts: model1.size,
        nodes: dump1.nodes.length,
        codes: dump1.codes.length,
      });
      // Opened on a complete state, there is nothing to do.
      const third = await StateSync.open(target, root1);
      expect(third.done).toBe(true);
      expect(third.take(10)).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it("refuses a tampered answer, naming the item, and writes nothing of the delivery", async () => {
    const target = await freshTarget();
    try {
      const sync = await StateSync.open(target, small[0]!.root);
      await finish(sync, { size: 16, rounds: 3 });
      const held = await trieKeyCount(target);
      const items = sync.take(8);
      expect(items.length).toBe(8);
      const pending = sync.progress().pending;

      const answers = await readStateItems(source, items);
      const changed = answers.map((a) => a!.slice());
      const last = changed[3]!.length - 1;
      changed[3]![last] = changed[3]![last]! ^ 1;
      const refused = await sync.deliver(items, changed);
      expect(refused.ok).toBe(false);
      if (refused.ok) return;
      expect(refused.index).toBe(3);
      expect(refused.reason).toContain(`item 3 (${items[3]!.kind} ${bytesToHex(items[3]!.hash)})`);
      expect(refused.reason).toContain("hashes to");
      expect(await trieKeyCount(target)).toBe(held);
      expect(await readStateItems(target, items)).toEqual(items.map(() => undefined));
      // Back in the frontier, the same items come out again.
      expect(sync.progress()).toMatchObject({ pending: pending + 8, inFlight: 0 });
      const again = sync.take(8);
      expect(again.map((i) => bytesToHex(i.hash)).sort()).toEqual(
        items.map((i) => bytesToHex(i.hash)).sort(),
      );

      // Another item's node, at the right place otherwise.
      const swapped = await readStateItems(source, again);
      [swapped[0], swapped[1]] = [swapped[1], swapped[0]];
      const wrong = await sync.deliver(again, swapped);
      expect(wrong).toMatchObject({ ok: false, index: 0 });
      if (wrong.ok) return;
      expect(wrong.reason).toContain(bytesToHex(again[0]!.hash));
      expect(wrong.reason).toContain(`hashes to ${bytesToHex(again[1]!.hash)}`);
      expect(await trieKeyCount(target)).toBe(held);

      await finish(sync);
      expect(await dumpOf(target, small[0]!.root)).toEqual(small[0]!.dump);
    } finally {
      await target.close();
    }
  });

  it("refuses an answer that hashes right but is not a trie node", async () => {
    const cases: [Uint8Array, string][] = [
      [Uint8Array.of(0x80, 0x01), "not RLP"],
      [RLP.encode([Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(3)]), "2 or 17 items"],
      [RLP.encode(new Uint8Array(40)), "is a list"],
      [RLP.encode([Uint8Array.of(0x20, 0x01), Uint8Array.of(5)]), "not [nonce, balance"],
      [RLP.encode([Uint8Array.of(0x00, 0x01), new Uint8Array(7)]), "child reference of 7 bytes"],
      [RLP.encode([Uint8Array.of(0x51), new Uint8Array(32)]), "not hex-prefix"],
    ];
    const target = await freshTarget();
    try {
      for (const [bytes, reason] of cases) {
        const root = keccak256(bytes);
        const sync = await StateSync.open(target, root);
        const items = sync.take(1);
        const result = await sync.deliver(items, [bytes]);
        expect(result).toMatchObject({ ok: false, index: 0 });
        if (!result.ok) expect(result.reason).toContain(reason);
        expect(await target.get(Bucket.TRIE, root)).toBeUndefined();
        expect(sync.progress()).toMatchObject({ pending: 1, inFlight: 0 });
      }
    } finally {
      await target.close();
    }
  });

  it("puts unanswered items back in the frontier and asks for them again", async () => {
    const target = await freshTarget();
    try {
      const sync = await StateSync.open(target, small[0]!.root);
      await finish(sync, { size: 16, rounds: 3 });
      const items = sync.take(10);
      expect(items.length).toBe(10);
      const answers = await readStateItems(source, items);
      // The peer lacks items 2 and 5, and answers only the first 8.
      const partial = answers.slice(0, 8).map((a, i) => (i === 2 || i === 5 ? undefined : a));
      const result = await sync.deliver(items, partial);
      expect(result).toMatchObject({ ok: true, written: 6, missing: 4 });
      const lacking = [2, 5, 8, 9].map((i) => bytesToHex(items[i]!.hash));
      for (const i of [2, 5, 8, 9])
        expect(await target.get(Bucket.TRIE, items[i]!.hash)).toBeUndefined();
      const asked = new Set<string>();
      while (!sync.done && lacking.some((h) => !asked.has(h))) {
        const next = sync.take(16);
        for (const item of next) asked.add(bytesToHex(item.hash));
        await sync.deliver(next, await readStateItems(source, next));
      }
      for (const hash of lacking) expect(asked.has(hash)).toBe(true);
      await finish(sync);
      expect(await dumpOf(target, small[0]!.root)).toEqual(small[0]!.dump);
    } finally {
      await target.close();
    }
  });

  it("follows a moved pivot: retarget mid-way, old answers delivered late", async () => {
    expect(bytesToHex(root2)).not.toBe(bytesToHex(root1));
    const target = await freshTarget();
    try {
      const sync = await StateSync.open(target, root1);
      await finish(sync, { size: 32, rounds: 40 });
      const old = sync.take(20);
      await sync.retarget(root2);
      expect(bytesToHex(sync.root)).toBe(bytesToHex(root2));
      expect(sync.progress()).toMatchObject({ pending: 1, inFlight: 0 });
      // Answers for the old root, after the move: written (content-addressed), children not queued.
      const late = await sync.deliver(old, await readStateItems(source, old));
      expect(late).toMatchObject({ ok: true, written: 20, stale: 20 });
      await finish(sync, { size: 32 });
      expect(await dumpOf(target, root2)).toEqual(dump2);
      expect(sync.progress()).toMatchObject({ accounts: model2.size, nodes: dump2.nodes.length });
    } finally {
      await target.close();
    }
  });

  it("downloads only what changed into a database holding an older state", async () => {
    const target = await freshTarget();
    try {
      await finish(await StateSync.open(target, root1), { size: 64 });
      const sync = await StateSync.open(target, root2);
      // The new root is missing, so nothing held is reached yet.
      expect(sync.progress()).toMatchObject({ nodes: 0, pending: 1 });
      let written = 0;
      while (!sync.done) {
        const items = sync.take(64);
        const result = await sync.deliver(items, await readStateItems(source, items));
        if (result.ok) written += result.written;
      }
      const old = new Set(dump1.nodes);
      const fresh = dump2.nodes.filter((n) => !old.has(n)).length;
      const freshCodes = dump2.codes.filter((c) => !dump1.codes.includes(c)).length;
      expect(written).toBe(fresh + freshCodes);
      expect(await dumpOf(target, root2)).toEqual(dump2);
    } finally {
      await target.close();
    }
  });

  it("finishes whatever the takes, answers, releases, restarts and retargets (8 seeded cases)", async () => {
    const seen = { retargets: 0, restarts: 0, releases: 0, concurrent: 0, stale: 0, missing: 0 };
    for (let seed = 1; seed <= 8; seed++) {
      const random = prng(seed * 7919);
      const target = await freshTarget();
      try {
        let sync = await StateSync.open(target, small[0]!.root);
        let at = 0;
        const outstanding: StateItem[][] = [];
        let steps = 0;
        while (!sync.done || outstanding.length > 0) {
          if (++steps > 50_000) throw new Error(`seed ${seed}: the sync does not end`);
          const r = random();
          if (r < 0.45 || outstanding.length === 0) {
            const items = sync.take(1 + Math.floor(random() * 64));
            if (items.length > 0) outstanding.push(items);
            continue;
          }
          const items = outstanding.splice(Math.floor(random() * outstanding.length), 1)[0]!;
          if (r < 0.55) {
            sync.release(items);
            seen.releases++;
            continue;
          }
          // Sometimes two peers answer at once.
          const batches = [items];
          if (r < 0.65 && outstanding.length > 0) {
            batches.push(outstanding.pop()!);
            seen.concurrent++;
          }
          const results = await Promise.all(
            batches.map(async (batch) => {
              const bound = random() < 0.5 ? undefined : 100 + Math.floor(random() * 6000);
              const answers = await readStateItems(source, batch, bound);
              const kept = answers.slice(0, Math.floor(random() * (answers.length + 1)));
              for (let i = 0; i < kept.length; i++) if (random() < 0.15) kept[i] = undefined;
              return sync.deliver(batch, kept);
            }),
          );
          for (const result of results) {
            if (!result.ok) throw new Error(`seed ${seed}: ${result.reason}`);
            seen.stale += result.stale;
            seen.missing += result.missing;
          }
          if (r > 0.99 && at === 0) {
            await sync.retarget(small[1]!.root);
            at = 1;
            seen.retargets++;
          } else if (r > 0.98) {
            seen.restarts++;
            // A restart: the engine and everything in flight are dropped.
            sync = await StateSync.open(target, sync.root);
            outstanding.length = 0;
          }
        }
        expect(bytesToHex(sync.root)).toBe(bytesToHex(small[at]!.root));
        expect(await dumpOf(target, sync.root)).toEqual(small[at]!.dump);
        expect(sync.progress()).toMatchObject({
          accounts: small[at]!.model.size,
          pending: 0,
          inFlight: 0,
        });
      } finally {
        await target.close();
      }
    }
    // The cases went through each path.
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(0);
  }, 60_000);

  it("is done at once for the empty state", async () => {
    const target = await freshTarget();
    try {
      const sync = await StateSync.open(target, EMPTY_TRIE_ROOT);
      expect(sync.done).toBe(true);
      expect(sync.take(5)).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it("rejects arguments it cannot take with STATE_SYNC_INVALID", async () => {
    const target = await freshTarget();
    try {
      const invalid = { code: "STATE_SYNC_INVALID" };
      await expect(StateSync.open(target, new Uint8Array(31))).rejects.toMatchObject({
        ...invalid,
        message: "a state root is 32 bytes, got 31 bytes",
      });
      await expect(StateSync.open(target, "0x00" as unknown as Uint8Array)).rejects.toMatchObject(
        invalid,
      );
      const sync = await StateSync.open(target, root1);
      expect(() => sync.take(-1)).toThrow(expect.objectContaining(invalid));
      expect(() => sync.take(1.5)).toThrow(expect.objectContaining(invalid));
      const items = sync.take(1);
      await expect(sync.deliver(items, ["00" as unknown as Uint8Array])).rejects.toMatchObject({
        ...invalid,
        message: "deliver: answer 0 is neither bytes nor undefined",
      });
      await expect(sync.deliver(items, [undefined, undefined])).rejects.toMatchObject({
        ...invalid,
        message: "deliver: 2 answers for 1 items",
      });
      await expect(
        sync.deliver([{ hash: root1, kind: "node", code: false } as never], []),
      ).rejects.toMatchObject(invalid);
      expect(() => sync.release([{ hash: root1, kind: "code", code: false }])).toThrow(
        expect.objectContaining(invalid),
      );
      await expect(sync.deliver(null as never, [])).rejects.toMatchObject(invalid);
      await expect(sync.retarget(new Uint8Array(33))).rejects.toMatchObject(invalid);
      // Nothing changed: the item is still in flight.
      expect(sync.progress()).toMatchObject({ pending: 0, inFlight: 1 });
    } finally {
      await target.close();
    }
  });
});
