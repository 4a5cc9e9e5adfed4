import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Address,
  bytesToHex,
  encodeQuantity,
  hexToBytes,
  keccak256,
  NodexError,
} from "@nodex/types";
import {
  Bucket,
  Database,
  ForkSource,
  type ForkSourceOptions,
  NodeCache,
  NodeStore,
  StateError,
  StateErrorCode,
  type UpstreamCalls,
  WorldState,
} from "../../src/index.js";

export const FORK_BLOCK = "0x10";

/** A seeded PRNG (mulberry32): the same cases on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The `n`-th test address of a family (keccak: spread over the trie). */
export const address = (n: number, family = 0) =>
  keccak256(Uint8Array.of(family, n >> 16, (n >> 8) & 0xff, n & 0xff)).slice(12) as Address;
/** The `n`-th test slot (keccak: spread over the storage trie). */
export const slot = (n: number) => keccak256(Uint8Array.of(0xff, n >> 8, n & 0xff));
export const word = (n: bigint) => {
  const out = new Uint8Array(32);
  let v = n;
  for (let i = 31; i >= 0 && v > 0n; i--, v >>= 8n) out[i] = Number(v & 0xffn);
  return out;
};

export interface Contract {
  readonly address: Address;
  readonly slots: readonly Uint8Array[];
  readonly code: Uint8Array;
}

/** The state an upstream node holds at the fork block: a real Nodex state in its own database. */
export interface UpstreamState {
  readonly dir: string;
  readonly db: Database;
  readonly root: Uint8Array;
  readonly accounts: readonly Address[];
  readonly contracts: readonly Contract[];
  /** A contract with exactly two slots, whose hashes part at the first nibble. */
  readonly pair: Contract;
  close(): Promise<void>;
}

/**
 * Builds the upstream's state: `accounts` accounts with balances and nonces, and contracts
 * (code, storage: the first ones hundreds of slots), committed to a database of its own.
 */
export async function buildUpstream(accounts = 2000): Promise<UpstreamState> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-fork-upstream-"));
  const db = await Database.open(join(dir, "db"));
  const store = new NodeStore(db);
  const state = await WorldState.open(store);
  const random = prng(7);
  const list: Address[] = [];
  for (let i = 0; i < accounts; i++) {
    const a = address(i);
    list.push(a);
    await state.setBalance(a, BigInt(Math.floor(random() * 1e15)) * 10n ** 6n + 1n);
    if (i % 3 === 0) await state.setNonce(a, BigInt(i));
  }
  const contracts: Contract[] = [];
  for (let c = 0; c < 24; c++) {
    const a = address(c, 1);
    const code = Uint8Array.from({ length: 40 + c }, (_, i) => (i * 7 + c) & 0xff);
    await state.setCode(a, code);
    const count = c < 3 ? 300 : 5 + c;
    const slots: Uint8Array[] = [];
    for (let s = 0; s < count; s++) {
      const k = slot(s + c * 1000);
      slots.push(k);
      await state.setStorage(a, k, word(BigInt(s + 1) * 0x1_0000_0001n));
    }
    contracts.push({ address: a, slots, code });
  }
  // Two slots whose hashes start with different nibbles: a branch at the root of the storage
  // trie with two leaves.
  const first = slot(60000);
  let n = 60001;
  while (keccak256(slot(n))[0]! >> 4 === keccak256(first)[0]! >> 4) n++;
  const pairAddress = address(0, 2);
  const pairCode = Uint8Array.of(0x60, 0x01, 0x00);
  await state.setCode(pairAddress, pairCode);
  await state.setStorage(pairAddress, first, word(11n));
  await state.setStorage(pairAddress, slot(n), word(22n));
  const pair = { address: pairAddress, slots: [first, slot(n)], code: pairCode };
  const root = await state.commit();
  await db.write(store.takeWrites([root]));
  store.confirmWrites();
  return {
    dir,
    db,
    root,
    accounts: list,
    contracts,
    pair,
    close: async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What the test upstream throws once it is gone: a client's "unreachable" error. */
export class UpstreamUnavailable extends NodexError<"UPSTREAM_UNAVAILABLE"> {}

/**
 * An upstream node over a real state: `eth_getProof` and `eth_getCode` answered from the
 * state at `root` as JSON, as a node formats them. `tamper` may change an answer; `gone` makes
 * every call fail as an unreachable node does; `calls` records each call.
 */
export class StateUpstream implements UpstreamCalls {
  readonly calls: { method: string; params: unknown[] }[] = [];
  gone = false;
  /** Whether it serves `nodex_getTrieNodes`, as a Nodex node does. */
  servesNodes = false;
  tamper:
    | ((method: string, answer: Record<string, unknown> | string, params: unknown[]) => unknown)
    | undefined;
  readonly #store: NodeStore;
  readonly #root: Uint8Array;
  readonly #name: string;

  constructor(db: Database, root: Uint8Array, name = "http://127.0.0.1:8545") {
    this.#store = new NodeStore(db);
    this.#root = root;
    this.#name = name;
  }

  describe(): string {
    return this.#name;
  }

  async call(method: string, params: unknown[]): Promise<unknown> {
    this.calls.push({ method, params });
    if (this.gone)
      throw new UpstreamUnavailable(
        "UPSTREAM_UNAVAILABLE",
        `upstream ${this.#name} is unreachable`,
      );
    const state = await WorldState.open(this.#store, this.#root);
    let answer: Record<string, unknown> | string;
    if (method === "eth_getProof") {
      const [a, slots, tag] = params as [string, string[], string];
      if (tag !== FORK_BLOCK) throw new Error(`asked for block ${tag}`);
      const p = await state.getProof(hexToBytes(a) as Address, slots.map(hexToBytes));
      answer = {
        address: bytesToHex(p.address),
        balance: encodeQuantity(p.balance),
        codeHash: bytesToHex(p.codeHash),
        nonce: encodeQuantity(p.nonce),
        storageHash: bytesToHex(p.storageHash),
        accountProof: p.accountProof.map((n) => bytesToHex(n)),
        storageProof: p.storageProof.map((s) => ({
          key: bytesToHex(s.key),
          value: encodeQuantity(s.value),
          proof: s.proof.map((n) => bytesToHex(n)),
        })),
      };
    } else if (method === "eth_getCode") {
      const [a, tag] = params as [string, string];
      if (tag !== FORK_BLOCK) throw new Error(`asked for block ${tag}`);
      answer = bytesToHex(await state.getCode(hexToBytes(a) as Address));
    } else if (method === "nodex_getTrieNodes" && this.servesNodes) {
      const [hashes] = params as [string[]];
      const nodes = await Promise.all(hashes.map((h) => this.#store.get(h.slice(2))));
      return nodes.map((n) => (n === undefined ? null : bytesToHex(n)));
    } else {
      // As a node answers a method it does not have: -32601, which the client reports so.
      throw new StateError(StateErrorCode.UPSTREAM_ERROR, `the method ${method} does not exist`, {
        method,
        code: -32601,
      });
    }
    return this.tamper === undefined ? answer : this.tamper(method, answer, params);
  }

  count(method?: string): number {
    return this.calls.filter((c) => method === undefined || c.method === method).length;
  }
}

/** A fresh database in a temp dir with a fork source at `root` attached to its store. */
export async function openFork(
  upstream: UpstreamCalls,
  root: Uint8Array,
  opts: { dir?: string; cache?: boolean } & Partial<ForkSourceOptions> = {},
) {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "nodex-fork-"));
  const db = await Database.open(join(dir, "db"));
  const source = new ForkSource({
    upstream,
    db,
    blockTag: FORK_BLOCK,
    stateRoot: root,
    ...(opts.searchLimit === undefined ? {} : { searchLimit: opts.searchLimit }),
  });
  const cache = opts.cache === false ? undefined : new NodeCache();
  const store = new NodeStore(db, cache, { fork: source });
  return {
    dir,
    db,
    source,
    store,
    cache,
    close: async () => {
      await db.close().catch(() => {});
    },
    remove: async () => {
      await db.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The trie bucket's keys (nodes and code) in `db`. */
export async function trieKeys(db: Database): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const key of db.keys(Bucket.TRIE)) keys.add(bytesToHex(key));
  return keys;
}
