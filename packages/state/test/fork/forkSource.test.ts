import { Address as EJSAddress } from "@ethereumjs/util";
import { type Address, bytesToHex, keccak256 } from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AccountReader,
  Bucket,
  dumpState,
  ForkSource,
  NodeStore,
  pruneTrieNodes,
  StateError,
  StateErrorCode,
  WorldState,
} from "../../src/index.js";
import {
  address,
  buildUpstream,
  FORK_BLOCK,
  openFork,
  prng,
  StateUpstream,
  slot,
  trieKeys,
  type UpstreamState,
  UpstreamUnavailable,
  word,
} from "./upstream.js";

let up: UpstreamState;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  up = await buildUpstream(2000);
}, 60_000);
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  await up.close();
});

/** A fork of the upstream's state in a fresh database, removed after the file's tests. */
async function fork(upstream = new StateUpstream(up.db, up.root), opts = {}) {
  const local = await openFork(upstream, up.root, opts);
  cleanups.push(local.remove);
  return { ...local, upstream };
}

/** The upstream's full state, opened on a store whose writes stay in memory. */
const reference = () => WorldState.open(new NodeStore(up.db), up.root);

const plain = (a: Awaited<ReturnType<WorldState["getAccount"]>>) =>
  a === undefined
    ? undefined
    : {
        nonce: a.nonce,
        balance: a.balance,
        storageRoot: bytesToHex(a.storageRoot),
        codeHash: bytesToHex(a.codeHash),
      };

async function rejection(promise: Promise<unknown>): Promise<StateError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StateError);
  return error as StateError;
}

describe("ForkSource: lazy, verified reads", () => {
  it("opens the fork root and reads accounts, code and storage as the upstream has them", async () => {
    const { store, upstream, source } = await fork();
    const state = await WorldState.open(store, up.root);
    const ref = await reference();
    const random = prng(1);
    for (let i = 0; i < 60; i++) {
      const a = up.accounts[Math.floor(random() * up.accounts.length)]!;
      expect(plain(await state.getAccount(a))).toEqual(plain(await ref.getAccount(a)));
    }
    // Absent accounts, and the absent account's slots.
    for (let i = 0; i < 10; i++) {
      const absent = address(i, 9);
      expect(await state.getAccount(absent)).toBeUndefined();
      expect(await state.getStorage(absent, slot(1))).toEqual(new Uint8Array(32));
    }
    for (const c of up.contracts.slice(0, 6)) {
      expect(await state.getCode(c.address)).toEqual(c.code);
      for (const k of c.slots.slice(0, 20))
        expect(await state.getStorage(c.address, k)).toEqual(await ref.getStorage(c.address, k));
      // A slot the contract never set.
      expect(await state.getStorage(c.address, slot(59999))).toEqual(new Uint8Array(32));
    }
    expect(await state.root()).toEqual(up.root);
    const stats = source.stats();
    expect(stats.calls).toBe(upstream.count());
    expect(stats.codes).toBe(6);
    expect(stats.accounts).toBe(upstream.count("eth_getProof"));
    expect(stats.nodes).toBeGreaterThan(0);
  });

  it("reads through the state manager the EVM runs on, and through AccountReader", async () => {
    const { store, upstream } = await fork();
    const state = await WorldState.open(store, up.root);
    const ref = await reference();
    const c = up.contracts[4]!;
    const a = new EJSAddress(c.address);
    const account = await state.manager.getAccount(a);
    expect(bytesToHex(account!.codeHash)).toBe(bytesToHex(keccak256(c.code)));
    expect(await state.manager.getCode(a)).toEqual(c.code);
    expect(await state.manager.getCodeSize(a)).toBe(c.code.length);
    expect(await state.manager.getStorage(a, c.slots[3]!)).toEqual(
      await ref.manager.getStorage(a, c.slots[3]!),
    );
    const reader = new AccountReader(store, up.root);
    for (const n of [5, 77, 1999]) {
      const at = up.accounts[n]!;
      expect(plain(await reader.getAccount(at))).toEqual(plain(await ref.getAccount(at)));
    }
    expect(await reader.getAccount(address(3, 9))).toBeUndefined();
    expect(upstream.count()).toBeGreaterThan(0);
  });

  it("reads and writes through the manager inside the EVM's checkpoints, from a root it was set to", async () => {
    const { store } = await fork();
    const mine = await WorldState.open(store);
    await mine.manager.setStateRoot(up.root);
    const theirs = await reference();
    const c = up.contracts[2]!;
    const a = new EJSAddress(up.accounts[900]!);
    for (const s of [mine, theirs]) {
      const m = s.manager;
      await m.checkpoint();
      const account = (await m.getAccount(a))!;
      account.balance += 7n;
      await m.putAccount(a, account);
      await m.checkpoint();
      const value = await m.getStorage(new EJSAddress(c.address), c.slots[11]!);
      await m.putStorage(new EJSAddress(c.address), c.slots[12]!, value);
      await m.putStorage(new EJSAddress(c.address), c.slots[13]!, new Uint8Array());
      expect(await m.getCode(new EJSAddress(c.address))).toEqual(c.code);
      await m.commit();
      await m.commit();
    }
    expect(bytesToHex(await mine.commit())).toBe(bytesToHex(await theirs.commit()));
  });

  it("gives eth_getProof's answers of the upstream for a forked state", async () => {
    const { store } = await fork();
    const state = await WorldState.open(store, up.root);
    const ref = await reference();
    const c = up.contracts[1]!;
    for (const [a, slots] of [
      [c.address, [c.slots[0]!, slot(59998)]],
      [up.accounts[42]!, []],
      [address(1, 9), [slot(3)]],
    ] as const) {
      expect(await state.getProof(a, slots)).toEqual(await ref.getProof(a, slots));
    }
  });

  it("asks the upstream once per account: not again on a second read, nor after a restart", async () => {
    const { store, upstream, source, dir, db } = await fork();
    const a = up.accounts[123]!;
    const c = up.contracts[2]!;
    const state = await WorldState.open(store, up.root);
    const before = await state.getAccount(a);
    const code = await state.getCode(c.address);
    const value = await state.getStorage(c.address, c.slots[7]!);
    const calls = upstream.count();
    // The fork root (1 proof), the account (1), the contract's account and code (2), the slot (1).
    expect(calls).toBe(5);
    const again = await WorldState.open(store, up.root);
    expect(plain(await again.getAccount(a))).toEqual(plain(before));
    expect(await again.getCode(c.address)).toEqual(code);
    expect(await again.getStorage(c.address, c.slots[7]!)).toEqual(value);
    expect(upstream.count()).toBe(calls);
    expect(source.stats().calls).toBe(calls);

    // A restart: a new database on the same path, an upstream that is gone.
    await db.close();
    const gone = new StateUpstream(up.db, up.root);
    gone.gone = true;
    const reopened = await openFork(gone, up.root, { dir });
    cleanups.push(reopened.close);
    const restarted = await WorldState.open(reopened.store, up.root);
    expect(plain(await restarted.getAccount(a))).toEqual(plain(before));
    expect(await restarted.getCode(c.address)).toEqual(code);
    expect(await restarted.getStorage(c.address, c.slots[7]!)).toEqual(value);
    expect(gone.count()).toBe(0);
    // What was never fetched: the upstream's own error, as it threw it.
    const error = await restarted.getAccount(up.accounts[1500]!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamUnavailable);
    expect((error as UpstreamUnavailable).code).toBe("UPSTREAM_UNAVAILABLE");
    expect(gone.count()).toBe(1);
    expect(reopened.source.stats()).toMatchObject({ accounts: 0, nodes: 0, calls: 1 });
  });

  it("shares one fetch between concurrent reads of the same account", async () => {
    const { store, upstream } = await fork();
    await WorldState.open(store, up.root);
    const before = upstream.count();
    const states = await Promise.all([1, 2, 3].map(() => WorldState.open(store, up.root)));
    const a = up.accounts[777]!;
    const seen = await Promise.all(states.map((s) => s.getAccount(a)));
    expect(new Set(seen.map((s) => s?.balance)).size).toBe(1);
    expect(upstream.count()).toBe(before + 1);
  });

  it("fetches code only for the code hash the account has at the fork block", async () => {
    const { source, db, upstream } = await fork();
    const c = up.contracts[3]!;
    const before = await trieKeys(db);
    const other = keccak256(Uint8Array.of(1, 2, 3));
    const error = await rejection(source.fetchCode(c.address, other));
    expect(error.code).toBe(StateErrorCode.FORK_NODE_UNAVAILABLE);
    expect(error.message).toBe(
      `code ${bytesToHex(other)} of ${bytesToHex(c.address)} is not in the database and is not the fork block's code of that account`,
    );
    expect(upstream.count("eth_getCode")).toBe(0);
    // The account's proof was fetched (and kept: it checked out); no code was.
    const after = await trieKeys(db);
    expect([...after].filter((k) => k.startsWith("0x63") && k.length === 68)).toEqual([]);
    expect(after.size).toBeGreaterThan(before.size);
    await source.fetchCode(c.address, keccak256(c.code));
    expect(await db.get(Bucket.TRIE, Uint8Array.of(0x63, ...keccak256(c.code)))).toEqual(c.code);
  });

  it("refuses a dump of a state it does not fully hold", async () => {
    const { store, db } = await fork();
    const state = await WorldState.open(store, up.root);
    await state.getAccount(up.accounts[0]!);
    const error = await rejection(dumpState(db, up.root));
    expect(error.code).toBe(StateErrorCode.ROOT_MISSING);
    expect(error.message).toMatch(/^trie node 0x[0-9a-f]{64} is missing from the database$/);
  });

  it("refuses verify: false (not supported yet) with a clear error", async () => {
    const upstream = new StateUpstream(up.db, up.root);
    const error = await rejection(
      (async () =>
        new ForkSource({
          upstream,
          db: up.db,
          blockTag: FORK_BLOCK,
          stateRoot: up.root,
          verify: false,
        }))(),
    );
    expect(error.code).toBe(StateErrorCode.FORK_UNSUPPORTED);
    expect(error.message).toContain("not supported yet");
  });

  it("says an upstream that does not serve eth_getProof has none; other refusals pass", async () => {
    const refusal = (code: number, message: string) => () => {
      throw new StateError(StateErrorCode.UPSTREAM_ERROR, `upstream answered with ${code}`, {
        code,
        message,
      });
    };
    const noMethod = new StateUpstream(up.db, up.root, "http://127.0.0.1:7545");
    noMethod.tamper = refusal(-32601, "Method eth_getProof not found");
    const { store } = await fork(noMethod);
    const error = await rejection(WorldState.open(store, up.root));
    expect(error.code).toBe(StateErrorCode.FORK_UNSUPPORTED);
    expect(error.message).toMatch(
      /^the fork's upstream http:\/\/127\.0\.0\.1:7545 has no eth_getProof/,
    );
    expect(error.message).toContain("--fork-verify off");

    const notSupported = new StateUpstream(up.db, up.root);
    notSupported.tamper = refusal(-32000, "the method eth_getProof is not supported");
    const second = await fork(notSupported);
    expect((await rejection(WorldState.open(second.store, up.root))).code).toBe(
      StateErrorCode.FORK_UNSUPPORTED,
    );

    const failing = new StateUpstream(up.db, up.root);
    failing.tamper = refusal(-32000, "header not found");
    const third = await fork(failing);
    const other = await rejection(WorldState.open(third.store, up.root));
    expect(other.code).toBe(StateErrorCode.UPSTREAM_ERROR);
  });
});

describe("ForkSource: local blocks on the fork", () => {
  /** One random change, made the same way to the forked state and to the upstream's full one. */
  async function randomChange(
    random: () => number,
    states: readonly WorldState[],
    created: Address[],
  ): Promise<void> {
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const value = BigInt(Math.floor(random() * 1e9));
    const kind = Math.floor(random() * 9);
    kinds[kind]!++;
    const c = pick(up.contracts.slice(0, 8));
    const all = async (f: (s: WorldState) => Promise<unknown>) => {
      const out = [];
      for (const s of states) out.push(await f(s));
      return out;
    };
    switch (kind) {
      case 0: {
        const a = pick(up.accounts);
        await all((s) => s.setBalance(a, value));
        break;
      }
      case 1: {
        const a = pick(up.accounts);
        await all((s) => s.setNonce(a, value));
        break;
      }
      case 2: {
        const k = pick(c.slots);
        await all((s) => s.setStorage(c.address, k, word(value + 1n)));
        break;
      }
      case 3: {
        // A slot set to zero: deleted, and a branch may collapse onto a sibling.
        const k = pick(c.slots);
        await all((s) => s.setStorage(c.address, k, new Uint8Array(32)));
        break;
      }
      case 4: {
        const k = slot(40000 + Math.floor(random() * 500));
        await all((s) => s.setStorage(c.address, k, word(value + 1n)));
        break;
      }
      case 5: {
        const a = address(created.length, 5);
        created.push(a);
        await all((s) => s.setCode(a, Uint8Array.of(0x60, Number(value & 0xffn), 0x00)));
        await all((s) => s.setBalance(a, value));
        break;
      }
      case 6: {
        // An account removed: a branch of the account trie may collapse onto a sibling.
        const a = new EJSAddress(pick(up.accounts));
        await all((s) => s.manager.deleteAccount(a));
        break;
      }
      case 7: {
        const a = pick(up.accounts);
        const [mine, theirs] = await all((s) => s.getAccount(a));
        expect(plain(mine as never)).toEqual(plain(theirs as never));
        break;
      }
      default: {
        const [mine, theirs] = await all((s) => s.getCode(c.address));
        expect(mine).toEqual(theirs);
      }
    }
  }

  /** How many changes of each kind the property test made (it checks it made every kind). */
  const kinds = new Array<number>(9).fill(0);

  it("reaches the upstream's own roots after random writes, deletions and creations (property, 12 cases)", async () => {
    let searches = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const random = prng(seed * 7919);
      const { store, db, remove, source } = await openFork(
        new StateUpstream(up.db, up.root),
        up.root,
      );
      try {
        const refStore = new NodeStore(up.db);
        let mine = await WorldState.open(store, up.root);
        let theirs = await WorldState.open(refStore, up.root);
        const created: Address[] = [];
        for (let block = 0; block < 3; block++) {
          for (let i = 0; i < 15; i++) await randomChange(random, [mine, theirs], created);
          const root = await mine.commit();
          expect(bytesToHex(root), `seed ${seed}, block ${block}`).toBe(
            bytesToHex(await theirs.commit()),
          );
          // The local block lands; the next one starts from its root.
          await db.write(store.takeWrites([root]));
          store.confirmWrites();
          mine = await WorldState.open(store, root);
          theirs = await WorldState.open(refStore, root);
        }
        searches += source.stats().searches;
      } finally {
        await remove();
      }
    }
    // Every kind of change ran, and deletions needed siblings found by search.
    expect(kinds.every((n) => n > 10)).toBe(true);
    expect(searches).toBeGreaterThan(0);
  }, 120_000);

  it("prunes a forked database like any other: what no kept root reaches goes, and is fetched again when read", async () => {
    const { store, db, upstream, cache } = await fork();
    const state = await WorldState.open(store, up.root);
    const kept = up.accounts[1]!;
    const other = up.accounts[2]!;
    const [keptBefore, otherBalance] = [
      await state.getBalance(kept),
      await state.getBalance(other),
    ];
    await state.setBalance(kept, 1n);
    const root = await state.commit();
    await db.write(store.takeWrites([root]));
    store.confirmWrites();
    // The fork root's node and the old nodes on the changed path go.
    const { deleted } = await pruneTrieNodes(db, [root], cache);
    expect(deleted).toBeGreaterThan(0);
    const calls = upstream.count();
    const after = await WorldState.open(store, root);
    expect(await after.getBalance(kept)).toBe(1n);
    expect(await after.getBalance(other)).toBe(otherBalance);
    expect(upstream.count()).toBe(calls);
    // The fork block's state again: fetched anew.
    const again = await WorldState.open(store, up.root);
    expect(await again.getBalance(kept)).toBe(keptBefore);
    expect(upstream.count()).toBeGreaterThan(calls);
  });

  it("fetches the sibling a deleted slot's branch collapses onto, found by search", async () => {
    const { store, source } = await fork();
    const mine = await WorldState.open(store, up.root);
    const theirs = await reference();
    const [first, second] = up.pair.slots as [Uint8Array, Uint8Array];
    for (const s of [mine, theirs]) await s.setStorage(up.pair.address, first, new Uint8Array(32));
    expect(bytesToHex(await mine.commit())).toBe(bytesToHex(await theirs.commit()));
    const stats = source.stats();
    expect(stats.searches).toBe(1);
    expect(stats.searchAttempts).toBeGreaterThan(0);
    expect(await mine.getStorage(up.pair.address, second)).toEqual(word(22n));
  });

  it("asks an upstream that serves nodes by hash for the sibling instead of searching", async () => {
    const upstream = new StateUpstream(up.db, up.root);
    upstream.servesNodes = true;
    const { store, source } = await fork(upstream, { searchLimit: 0 });
    const mine = await WorldState.open(store, up.root);
    const theirs = await reference();
    const [first, second] = up.pair.slots as [Uint8Array, Uint8Array];
    for (const s of [mine, theirs]) await s.setStorage(up.pair.address, first, new Uint8Array(32));
    expect(bytesToHex(await mine.commit())).toBe(bytesToHex(await theirs.commit()));
    const stats = source.stats();
    expect(stats.nodesByHash).toBe(1);
    expect(stats.searches).toBe(0);
    expect(await mine.getStorage(up.pair.address, second)).toEqual(word(22n));
  });

  it("stops with a clear error when no key within the bound leads to the sibling", async () => {
    const { store, db } = await fork(undefined, { searchLimit: 0 });
    const state = await WorldState.open(store, up.root);
    const before = await trieKeys(db);
    await state.setStorage(up.pair.address, up.pair.slots[0]!, new Uint8Array(32));
    const error = await rejection(state.commit());
    expect(error.code).toBe(StateErrorCode.FORK_NODE_UNAVAILABLE);
    expect(error.message).toMatch(
      /^trie node [0-9a-f]{64} of the fork's storage trie of 0x[0-9a-f]{40} \(position [0-9a-f], a sibling of a deleted key\) was not fetched: no key among 0 candidates leads to it$/,
    );
    // The path of the deleted slot was fetched, nothing else.
    expect((await trieKeys(db)).size).toBeGreaterThan(before.size);
  });

  it("says a node is still missing after its fetch rather than fetching it again", async () => {
    const { store, db, upstream } = await fork();
    const state = await WorldState.open(store, up.root);
    const a = up.accounts[10]!;
    await state.setBalance(a, 5n);
    const root = await state.commit();
    await db.write(store.takeWrites([root]));
    store.confirmWrites();
    // The local root node lost (a damaged database): no proof of the fork block holds it.
    await db.write([{ type: "del", bucket: Bucket.TRIE, key: root }]);
    const calls = upstream.count();
    const fresh = new NodeStore(db, undefined, { fork: store.fork! });
    const error = await rejection(new AccountReader(fresh, root).getAccount(a));
    expect(error.code).toBe(StateErrorCode.FORK_NODE_UNAVAILABLE);
    expect(error.message).toBe(
      `trie node ${bytesToHex(root).slice(2)} of the account trie is still missing after its fetch from the fork's upstream`,
    );
    expect(upstream.count()).toBe(calls + 1);
  });
});

describe("ForkSource: a wrong answer is caught and nothing of it kept", () => {
  const a = () => up.accounts[321]!;
  const c = () => up.contracts[0]!;

  async function caught(
    tamper: StateUpstream["tamper"],
    read: (s: WorldState) => Promise<unknown>,
    prepare?: (s: WorldState) => Promise<unknown>,
  ) {
    const upstream = new StateUpstream(up.db, up.root, "http://10.0.0.7:8545");
    const local = await fork(upstream);
    // The fork root (and what `prepare` reads), honestly.
    const honest = await WorldState.open(local.store, up.root);
    await prepare?.(honest);
    const before = await trieKeys(local.db);
    upstream.tamper = tamper;
    const state = await WorldState.open(local.store, up.root);
    const error = await rejection(read(state));
    expect(error.code).toBe(StateErrorCode.FORK_UNVERIFIED);
    expect(error.message).toContain("http://10.0.0.7:8545");
    expect(await trieKeys(local.db)).toEqual(before);
    return error;
  }

  it("a changed balance", async () => {
    const error = await caught(
      (m, answer) =>
        m === "eth_getProof" && typeof answer === "object"
          ? { ...answer, balance: `0x${(BigInt(answer.balance as string) + 1n).toString(16)}` }
          : answer,
      (s) => s.getAccount(a()),
    );
    expect(error.message).toContain(`account ${bytesToHex(a())}: the answer's balance`);
  });

  it("a changed slot value", async () => {
    const error = await caught(
      (m, answer) => {
        if (m !== "eth_getProof" || typeof answer !== "object") return answer;
        const storage = answer.storageProof as { value: string }[];
        return { ...answer, storageProof: storage.map((s) => ({ ...s, value: "0x1234" })) };
      },
      (s) => s.getStorage(c().address, c().slots[9]!),
      (s) => s.getAccount(c().address),
    );
    expect(error.message).toContain(`slot ${bytesToHex(c().slots[9]!)}: the answer's value 4660`);
    expect(error.meta).toMatchObject({ slot: bytesToHex(c().slots[9]!) });
  });

  it("a proof of another state root", async () => {
    // The upstream's state one block on: one balance changed.
    const store = new NodeStore(up.db);
    const later = await WorldState.open(store, up.root);
    await later.setBalance(a(), 1n);
    const laterRoot = await later.commit();
    await up.db.write(store.takeWrites([laterRoot]));
    store.confirmWrites();
    const liar = new StateUpstream(up.db, laterRoot);
    const error = await caught(
      (m, _answer, params) => liar.call(m, params),
      (s) => s.getAccount(a()),
    );
    // The liar's proof starts from its own root node.
    expect(error.message).toContain(
      `does not hold node ${bytesToHex(up.root).slice(2)}, the root: it is a proof of another state, not one from the state root ${bytesToHex(up.root)}`,
    );
  });

  it("a node changed in the proof", async () => {
    const error = await caught(
      (m, answer) => {
        if (m !== "eth_getProof" || typeof answer !== "object") return answer;
        const proof = [...(answer.accountProof as string[])];
        const last = proof[proof.length - 1]!;
        proof[proof.length - 1] = `${last.slice(0, -2)}${last.endsWith("00") ? "01" : "00"}`;
        return { ...answer, accountProof: proof };
      },
      (s) => s.getAccount(a()),
    );
    expect(error.message).toMatch(/the account proof does not hold node [0-9a-f]{64}, on the path/);
  });

  it("wrong code", async () => {
    const error = await caught(
      (m, answer) => (m === "eth_getCode" ? "0x6001" : answer),
      (s) => s.getCode(c().address),
      (s) => s.getAccount(c().address),
    );
    expect(error.message).toContain(
      `code of ${bytesToHex(c().address)}: its hash is ${bytesToHex(keccak256(Uint8Array.of(0x60, 0x01)))}`,
    );
  });

  it("a malformed answer", async () => {
    const error = await caught(
      (m, answer) => (m === "eth_getProof" ? { ...(answer as object), nonce: 7 } : answer),
      (s) => s.getAccount(a()),
    );
    expect(error.message).toContain("the eth_getProof answer's nonce is malformed");
  });
});
