import {
  Bucket,
  codeKey,
  type Database,
  EMPTY_TRIE_ROOT,
  orderedTrieRoot,
  readStateItems,
} from "@nodex/state";
import {
  type Block,
  type BlockHeader,
  bytesToHex,
  encodeReceipt,
  equalBytes,
  headerHash,
  keccak256,
  type Receipt,
  type RLPItem,
  rlpDecode,
} from "@nodex/types";
import type {
  SnapChain,
  SnapDelivery,
  SnapHeader,
  SnapStateItem,
  SnapStateProgress,
  SnapStateSync,
} from "../../src/snapSync.js";

const EMPTY_CODE_HASH = keccak256(new Uint8Array());

export type Kind = "account" | "storage" | "code";
interface Item extends SnapStateItem {
  readonly kind: Kind;
}

/**
 * Test double of `@nodex/state`'s `StateSync`: a download of the state of a root, keyed by hash.
 * It walks what the database holds from the root (so a restart asks only for what is missing),
 * hands out the missing items, checks each answer's hash, writes trie nodes under their hash
 * and code under `codeKey`, and follows each node to its children, each account to its storage
 * trie and code.
 */
export class StateSyncDouble implements SnapStateSync {
  readonly #db: Database;
  readonly #pending = new Map<string, Item>();
  readonly #inFlight = new Map<string, Item>();
  readonly counts = { accounts: 0, slots: 0, nodes: 0, codes: 0, bytes: 0 };
  /** Items written by deliveries. */
  written = 0;
  /** Items the walks found in the database. */
  walked = 0;

  private constructor(db: Database) {
    this.#db = db;
  }

  static async open(db: Database, root: Uint8Array): Promise<StateSyncDouble> {
    const sync = new StateSyncDouble(db);
    await sync.#walk([{ hash: root, code: false, kind: "account" }]);
    return sync;
  }

  take(max: number): Item[] {
    const out: Item[] = [];
    for (const [key, item] of this.#pending) {
      if (out.length >= max) break;
      this.#pending.delete(key);
      this.#inFlight.set(key, item);
      out.push(item);
    }
    return out;
  }

  async deliver(
    items: readonly SnapStateItem[],
    answers: readonly (Uint8Array | undefined)[],
  ): Promise<SnapDelivery> {
    for (let i = 0; i < items.length; i++) {
      const answer = answers[i];
      if (answer !== undefined && !equalBytes(keccak256(answer), items[i]!.hash))
        return {
          ok: false,
          reason: `item ${bytesToHex(items[i]!.hash)} does not hash to its bytes`,
        };
    }
    let written = 0;
    let missing = 0;
    let bytes = 0;
    const found: Item[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Item;
      const key = keyOf(item);
      this.#inFlight.delete(key);
      const answer = answers[i];
      if (answer === undefined) {
        this.#pending.set(key, item);
        missing++;
        continue;
      }
      await this.#db.write([
        {
          type: "put",
          bucket: Bucket.TRIE,
          key: item.code ? codeKey(item.hash) : item.hash,
          value: answer,
        },
      ]);
      written++;
      bytes += answer.length;
      this.#count(item, answer, found);
    }
    this.written += written;
    await this.#walk(found);
    return { ok: true, written, missing, bytes };
  }

  release(items: readonly SnapStateItem[]): void {
    for (const item of items) {
      const key = keyOf(item);
      const known = this.#inFlight.get(key);
      if (known === undefined) continue;
      this.#inFlight.delete(key);
      this.#pending.set(key, known);
    }
  }

  async retarget(root: Uint8Array): Promise<void> {
    this.#pending.clear();
    await this.#walk([{ hash: root, code: false, kind: "account" }]);
  }

  get done(): boolean {
    return this.#pending.size === 0 && this.#inFlight.size === 0;
  }

  progress(): SnapStateProgress {
    return { ...this.counts, pending: this.#pending.size, inFlight: this.#inFlight.size };
  }

  /** Follows `items` through what the database holds; what it lacks becomes pending. */
  async #walk(items: Item[]): Promise<void> {
    const queue = [...items];
    while (queue.length > 0) {
      const item = queue.pop()!;
      const key = keyOf(item);
      if (this.#pending.has(key) || this.#inFlight.has(key)) continue;
      const [stored] = await readStateItems(this.#db, [item]);
      if (stored === undefined) {
        this.#pending.set(key, item);
        continue;
      }
      this.walked++;
      if (!item.code) children(rlpDecode(stored), item.kind, queue);
    }
  }

  #count(item: Item, bytes: Uint8Array, out: Item[]): void {
    this.counts.bytes += bytes.length;
    if (item.code) {
      this.counts.codes++;
      return;
    }
    this.counts.nodes++;
    const kids: Item[] = [];
    const leaves = children(rlpDecode(bytes), item.kind, kids);
    if (item.kind === "account") this.counts.accounts += leaves;
    else this.counts.slots += leaves;
    out.push(...kids);
  }
}

function keyOf(item: SnapStateItem): string {
  return `${item.code ? "c" : "n"}${bytesToHex(item.hash)}`;
}

/** The items a trie node refers to (its children; an account's storage root and code); its leaves. */
function children(node: RLPItem, kind: Kind, out: Item[]): number {
  if (node instanceof Uint8Array) return 0;
  const ref = (child: RLPItem): number => {
    if (child instanceof Uint8Array) {
      if (child.length === 32) out.push({ hash: child, code: false, kind });
      return 0;
    }
    return children(child, kind, out);
  };
  if (node.length === 17) {
    let leaves = 0;
    for (let i = 0; i < 16; i++) leaves += ref(node[i]!);
    return leaves;
  }
  if (node.length !== 2) throw new Error(`a trie node of ${node.length} items`);
  const path = node[0] as Uint8Array;
  const isLeaf = path[0]! >> 4 >= 2;
  if (!isLeaf) return ref(node[1]!);
  if (kind === "account") {
    const account = rlpDecode(node[1] as Uint8Array) as Uint8Array[];
    const storageRoot = account[2]!;
    const codeHash = account[3]!;
    if (!equalBytes(storageRoot, EMPTY_TRIE_ROOT))
      out.push({ hash: storageRoot, code: false, kind: "storage" });
    if (!equalBytes(codeHash, EMPTY_CODE_HASH))
      out.push({ hash: codeHash, code: true, kind: "code" });
  }
  return 1;
}

/**
 * The syncing side's chain for these tests: a header chain in memory from genesis, the state in
 * a real LevelDB through `StateSyncDouble`, the pivot, and the installed pivot block checked
 * against its header (transactions and receipts roots) and its state (complete).
 */
export class TestSnapChain implements SnapChain {
  readonly db: Database;
  readonly headers = new Map<bigint, BlockHeader>();
  #tip: BlockHeader;
  pivot: bigint | undefined;
  readonly pivots: bigint[] = [];
  readonly engines: StateSyncDouble[] = [];
  installed: { block: Block; receipts: readonly Receipt[] } | undefined;
  /**
   * The stand-in for the consensus checks of a header (proof of work, merged mining): why it is
   * not valid, or undefined.
   */
  checkHeader: (header: BlockHeader) => string | undefined = () => undefined;
  /** Resolved before a state engine is opened (tests hold the state phase with it). */
  gate: Promise<void> = Promise.resolve();

  constructor(db: Database, genesis: BlockHeader) {
    this.db = db;
    this.#tip = genesis;
    this.headers.set(genesis.number, genesis);
  }

  async headerTip(): Promise<BlockHeader> {
    return this.#tip;
  }

  async storeHeaders(run: readonly SnapHeader[]): Promise<string | undefined> {
    const headers = run.map((h) => h.header);
    let tip = this.#tip;
    for (const header of headers) {
      if (header.number !== tip.number + 1n)
        return `header ${header.number} does not follow ${tip.number}`;
      if (!equalBytes(header.parentHash, headerHash(tip)))
        return `header ${header.number} is not the child of header ${tip.number}`;
      const why = this.checkHeader(header);
      if (why !== undefined) return `header ${header.number}: ${why}`;
      tip = header;
    }
    for (const header of headers) this.headers.set(header.number, header);
    this.#tip = tip;
    return undefined;
  }

  async headerByNumber(number: bigint): Promise<BlockHeader | undefined> {
    return this.headers.get(number);
  }

  async openStateSync(root: Uint8Array): Promise<SnapStateSync> {
    await this.gate;
    const engine = await StateSyncDouble.open(this.db, root);
    this.engines.push(engine);
    return engine;
  }

  async snapPivot(): Promise<bigint | undefined> {
    return this.pivot;
  }

  async saveSnapPivot(number: bigint): Promise<void> {
    this.pivot = number;
    this.pivots.push(number);
  }

  async installSnapshot(block: Block, receipts: readonly Receipt[]): Promise<string | undefined> {
    const header = this.headers.get(block.header.number);
    if (header === undefined || !equalBytes(headerHash(header), headerHash(block.header)))
      return "not a header of the header chain";
    const txRoot = await orderedTrieRoot(block.transactions.map((tx) => tx.raw));
    if (!equalBytes(txRoot, header.transactionsRoot)) return "transactions root mismatch";
    const receiptsRoot = await orderedTrieRoot(receipts.map(encodeReceipt));
    if (!equalBytes(receiptsRoot, header.receiptsRoot)) return "receipts root mismatch";
    const engine = this.engines.at(-1);
    if (engine === undefined || !engine.done) return "the state is not complete";
    this.installed = { block, receipts };
    return undefined;
  }
}
