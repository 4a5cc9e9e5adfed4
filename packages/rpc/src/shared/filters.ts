import { randomBytes } from "node:crypto";
import { blockLogs, type FoundLog, type LogQuery, type StoredBlock } from "@nodex/chain";
import { bloomBits, bloomHasBits } from "@nodex/evm";
import {
  type Address,
  type BlockSelector,
  bytesToHex,
  type Hash32,
  hexToBytes,
  type Logger,
  type SignedTransaction,
} from "@nodex/types";
import { RPCError, RPCErrorCode } from "../errors.js";
import {
  DEFAULT_FILTER_OPTIONS,
  type FilterChanges,
  type FilterOptions,
  type FilterService,
  formatId,
  type LogChange,
} from "../filters.js";
import { logInRange } from "../logFilter.js";
import type { ChainReaderService, NodeEvents } from "../services.js";
import type { SharedScript, SharedStore } from "./redis.js";

/**
 * Blocks a filter remembers it delivered (number, hash, and for a log filter the logs it gave
 * of each): how far back a poll can find where the chain it delivered and the replica's chain
 * part, and give the logs of the blocks in between back as removed.
 */
export const FILTER_TRAIL_BLOCKS = 64;

/** Transactions the shared stream of pending transactions keeps (about). */
const PENDING_STREAM_LENGTH = 10_000;
/** How long a transaction seen by one replica is not added again by another. */
const PENDING_SEEN_MS = 10 * 60_000;
/** Blocks that left the chain a replica remembers (to tell a rewind from being behind). */
const DEPARTED_BLOCKS = 4096;
/** Polls that lost a race with another poll of the same filter try again this many times. */
const POLL_ATTEMPTS = 8;

/** A log as a filter keeps it in Redis, to give it back as removed. */
interface StoredLog {
  readonly a: string;
  readonly t: string[];
  readonly d: string;
  readonly tx: string;
  readonly ti: number;
  readonly li: number;
}

/** A block a filter delivered up to: number, hash, and the logs it gave of it. */
interface TrailEntry {
  readonly n: string;
  readonly h: string;
  readonly logs?: StoredLog[];
}

/** Where a block or log filter stands: the trail (lowest first; its last is the cursor). */
interface ChainCursor {
  readonly td: string;
  readonly trail: TrailEntry[];
}

/** Where a pending-transaction filter stands in the shared stream. */
interface StreamCursor {
  readonly at: string;
}

type Kind = "logs" | "blocks" | "transactions";

const INSTALL: SharedScript = {
  name: "nodexFilterInstall",
  // KEYS: the filter, the index of filters, the stream of pending transactions.
  // ARGV: (unused), timeout, max filters, id, kind, query, state ('' for a stream cursor).
  // Expiries on Redis's clock, the one its keys expire by.
  lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local state = ARGV[7]
if state == '' then
  local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
  local at = '0-0'
  if #last > 0 then at = last[1][1] end
  state = '{"at":"' .. at .. '"}'
end
redis.call('HSET', KEYS[1], 'kind', ARGV[5], 'query', ARGV[6], 'state', state, 'v', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[4])
return 1
`,
};

const TOUCH: SharedScript = {
  name: "nodexFilterTouch",
  // KEYS: the filter, the index. ARGV: (unused), timeout, id.
  lua: `
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
`,
};

const ADVANCE: SharedScript = {
  name: "nodexFilterAdvance",
  // KEYS: the filter, the index. ARGV: (unused), timeout, id, the version read, the new state.
  // Compare-and-set: a poll through another replica that moved the cursor first wins.
  lua: `
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return -1 end
if v ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[5], 'v', tostring(tonumber(v) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
`,
};

const UNINSTALL: SharedScript = {
  name: "nodexFilterUninstall",
  lua: `
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
`,
};

const ADD_PENDING: SharedScript = {
  name: "nodexPendingAdd",
  // KEYS: the stream, then one "seen" key per transaction. ARGV: seen ms, stream length, hashes.
  lua: `
local added = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], '1', 'PX', ARGV[1], 'NX') then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'h', ARGV[i + 1])
    added = added + 1
  end
end
return added
`,
};

/**
 * Filters shared by the replicas of one endpoint through Redis: installed through one, polled
 * and uninstalled through any. Redis keeps each filter's definition, its cursor (the blocks it
 * delivered up to, with their hashes) and its expiry; a replica answering a poll computes the
 * changes from its own chain between the cursor and its head, walking back to where the two
 * part when the cursor is no longer canonical (the logs of the blocks in between come back as
 * removed), then moves the cursor by compare-and-set: of two polls at once through two
 * replicas, one delivers the changes and the other computes again from where it left off.
 *
 * A replica behind the cursor (less total difficulty, without the cursor's block) answers no
 * changes rather than remove what it has not seen yet. Pending-transaction filters read one
 * stream per network, to which every replica adds the transactions its pool takes in, each
 * once (the first replica to see it adds it).
 */
export class SharedFilterManager implements FilterService {
  readonly #reader: ChainReaderService;
  readonly #store: SharedStore;
  readonly #opts: FilterOptions;
  readonly #log: Logger;
  readonly #unsubscribe: (() => void)[];
  /**
   * Blocks that left this replica's chain (reorganizations, rewinds), newest last: a rewind
   * deletes them, and a cursor on one of them is behind this replica's head, not ahead of it.
   */
  readonly #departed = new Set<string>();
  #pending: string[] = [];
  #flushing = false;

  constructor(
    reader: ChainReaderService,
    events: NodeEvents,
    store: SharedStore,
    logger: Logger,
    opts: Partial<FilterOptions> = {},
  ) {
    this.#reader = reader;
    this.#store = store;
    this.#opts = { ...DEFAULT_FILTER_OPTIONS, ...opts };
    this.#log = logger;
    this.#unsubscribe = [
      events.onNewTransaction((tx) => this.#onNewTransaction(tx)),
      events.onHeadChange((change) => {
        for (const block of change.added) this.#departed.delete(bytesToHex(block.hash));
        for (const block of change.removed) {
          this.#departed.add(bytesToHex(block.hash));
          if (this.#departed.size > DEPARTED_BLOCKS)
            this.#departed.delete(this.#departed.values().next().value!);
        }
      }),
    ];
  }

  close(): void {
    for (const stop of this.#unsubscribe) stop();
  }

  async newLogFilter(query: LogQuery): Promise<bigint> {
    return this.#install("logs", encodeQuery(query), await this.#headCursor(true));
  }

  async newBlockFilter(): Promise<bigint> {
    return this.#install("blocks", "", await this.#headCursor(false));
  }

  async newPendingTransactionFilter(): Promise<bigint> {
    return this.#install("transactions", "", "");
  }

  async changes(id: bigint): Promise<FilterChanges> {
    for (let attempt = 0; attempt < POLL_ATTEMPTS; attempt++) {
      const record = await this.#read(id);
      const result =
        record.kind === "transactions"
          ? await this.#transactionChanges(record.state as StreamCursor)
          : await this.#chainChanges(
              record.kind,
              record.kind === "logs" ? decodeQuery(record.query) : undefined,
              record.state as ChainCursor,
            );
      if (result.next === undefined) {
        await this.#touch(id);
        return { kind: record.kind, changes: [] } as FilterChanges;
      }
      const moved = Number(
        await this.#store.run(
          ADVANCE,
          [filterKey(id), "filters"],
          [0, this.#opts.timeoutMs, formatId(id), record.version, result.next],
        ),
      );
      if (moved === -1) throw notFound();
      if (moved === 1) return result.changes;
      // Another poll moved the cursor first: what it delivered is not delivered again.
    }
    throw new RPCError(
      RPCErrorCode.LIMIT_EXCEEDED,
      `filter ${formatId(id)} is being polled by others at the same time; try again`,
    );
  }

  async logs(id: bigint): Promise<FoundLog[]> {
    return this.#reader.getLogs(await this.logQuery(id));
  }

  async logQuery(id: bigint): Promise<LogQuery> {
    const record = await this.#read(id);
    await this.#touch(id);
    if (record.kind !== "logs") {
      throw new RPCError(
        RPCErrorCode.INVALID_PARAMS,
        `filter ${formatId(id)} is a ${record.kind === "blocks" ? "block" : "pending transaction"} filter: eth_getFilterLogs takes a log filter (eth_newFilter)`,
      );
    }
    return decodeQuery(record.query);
  }

  async uninstall(id: bigint): Promise<boolean> {
    const removed = await this.#store.run(UNINSTALL, [filterKey(id), "filters"], [formatId(id)]);
    return Number(removed) === 1;
  }

  async #install(kind: Kind, query: string, state: string): Promise<bigint> {
    for (;;) {
      let id: bigint;
      do id = BigInt(bytesToHex(randomBytes(16)));
      while (id === 0n);
      const done = Number(
        await this.#store.run(
          INSTALL,
          [filterKey(id), "filters", "pending"],
          [0, this.#opts.timeoutMs, this.#opts.maxFilters, formatId(id), kind, query, state],
        ),
      );
      if (done === 1) return id;
      if (done === -1) {
        throw new RPCError(
          RPCErrorCode.LIMIT_EXCEEDED,
          `too many filters: this service keeps at most ${this.#opts.maxFilters}; uninstall unused ones (eth_uninstallFilter) or let them expire (${Math.round(this.#opts.timeoutMs / 1000)} s without a poll)`,
        );
      }
    }
  }

  async #read(
    id: bigint,
  ): Promise<{ kind: Kind; query: string; state: ChainCursor | StreamCursor; version: string }> {
    const key = filterKey(id);
    const [kind, query, state, version] = (await this.#store.run(READ, [key], [])) as (
      | string
      | null
    )[];
    if (kind === null || kind === undefined || state == null || version == null) throw notFound();
    return { kind: kind as Kind, query: query ?? "", state: JSON.parse(state), version };
  }

  async #touch(id: bigint): Promise<void> {
    const touched = await this.#store.run(
      TOUCH,
      [filterKey(id), "filters"],
      [0, this.#opts.timeoutMs, formatId(id)],
    );
    if (Number(touched) === 0) throw notFound();
  }

  async #head(): Promise<StoredBlock> {
    const head = await this.#reader.resolve(LATEST);
    if (head === null) throw new RPCError(RPCErrorCode.INTERNAL_ERROR, "no head block");
    return head;
  }

  async #headCursor(logs: boolean): Promise<string> {
    const head = await this.#head();
    const entry: TrailEntry = { n: head.block.header.number.toString(), h: bytesToHex(head.hash) };
    return JSON.stringify({
      td: head.totalDifficulty.toString(),
      trail: [logs ? { ...entry, logs: [] } : entry],
    } satisfies ChainCursor);
  }

  /** A block or log filter's changes from the cursor to this replica's head, and the next cursor. */
  async #chainChanges(
    kind: "logs" | "blocks",
    query: LogQuery | undefined,
    cursor: ChainCursor,
  ): Promise<{ changes: FilterChanges; next?: string }> {
    const head = await this.#head();
    const top = cursor.trail.at(-1)!;
    const nothing = { changes: { kind, changes: [] } as FilterChanges };
    const headHash = bytesToHex(head.hash);
    if (headHash === top.h) return nothing;
    const cursorTd = BigInt(cursor.td);
    const topNumber = BigInt(top.n);
    const departed = this.#departed.has(top.h);
    const known = departed || (await this.#reader.blockByHash(hexToBytes(top.h))) !== null;
    let canonical = false;
    if (!departed && known && head.block.header.number >= topNumber) {
      const atTop = await this.#reader.resolve({ kind: "number", number: topNumber });
      canonical = atTop !== null && bytesToHex(atTop.hash) === top.h;
    }
    // Not canonical here: news when the cursor's block left this replica's chain (a rewind or
    // a reorganization it went through), or when this replica's head is heavier than what was
    // delivered; otherwise this replica is behind (or level on another branch) and knows
    // nothing newer.
    if (!canonical && !departed && head.totalDifficulty <= cursorTd) return nothing;
    const cap = this.#opts.maxChanges;
    const added: StoredBlock[] = [];
    const removed: TrailEntry[] = [];
    let kept = cursor.trail.length;
    let block: StoredBlock | null = head;
    const parent = async (b: StoredBlock) => this.#reader.blockByHash(b.block.header.parentHash);
    if (canonical) {
      while (block !== null && block.block.header.number > topNumber && added.length < cap) {
        added.push(block);
        block = await parent(block);
      }
    } else {
      // Down the trail from the cursor: each delivered block not on this branch is removed,
      // until one is (the common ancestor) or the trail ends.
      let found = false;
      for (let i = cursor.trail.length - 1; i >= 0 && block !== null; i--) {
        const entry = cursor.trail[i]!;
        const n = BigInt(entry.n);
        while (
          block !== null &&
          block.block.header.number > n &&
          added.length < cap + FILTER_TRAIL_BLOCKS
        ) {
          added.push(block);
          block = await parent(block);
        }
        if (
          block !== null &&
          block.block.header.number === n &&
          bytesToHex(block.hash) === entry.h
        ) {
          found = true;
          kept = i + 1;
          break;
        }
        removed.push(entry);
        kept = i;
      }
      if (!found && block !== null && kept === 0) {
        // Parted deeper than the trail: the block at the trail's lowest number is new too.
        const lowest = BigInt(cursor.trail[0]!.n);
        if (block.block.header.number === lowest) added.push(block);
      }
    }
    added.reverse();
    removed.reverse();
    const delivered = added.slice(-cap);
    const entries: TrailEntry[] = [];
    let changes: FilterChanges;
    if (kind === "blocks") {
      changes = { kind, changes: delivered.slice(-cap).map((b) => b.hash) };
      for (const b of delivered.slice(-FILTER_TRAIL_BLOCKS))
        entries.push({ n: b.block.header.number.toString(), h: bytesToHex(b.hash) });
    } else {
      const q = query!;
      const out: LogChange[] = [];
      for (const entry of removed) {
        if (entry.logs !== undefined) {
          for (const log of entry.logs) out.push({ found: decodeLog(entry, log), removed: true });
          continue;
        }
        // Logs not kept in Redis (past MAX_TRAIL_LOGS): from this replica's copy of the block.
        const block = await this.#reader.blockByHash(hexToBytes(entry.h));
        if (block === null || !logInRange(q, block.block.header.number)) continue;
        const receipts = await this.#reader.blockReceipts(block).catch(() => undefined);
        if (receipts === undefined) continue;
        for (const f of blockLogs(
          block,
          receipts.map((r) => r.receipt),
          q,
        ))
          out.push({ found: withoutBlock(f), removed: true });
      }
      const bits = {
        addresses: q.addresses.map(bloomBits),
        topics: q.topics.map((position) => position?.map(bloomBits) ?? null),
      };
      const start = delivered.length - FILTER_TRAIL_BLOCKS;
      for (const [i, b] of delivered.entries()) {
        const found =
          logInRange(q, b.block.header.number) && bloomMatches(b.block.header.logsBloom, bits)
            ? blockLogs(
                b,
                (await this.#reader.blockReceipts(b)).map((r) => r.receipt),
                q,
              )
            : [];
        for (const f of found) out.push({ found: withoutBlock(f), removed: false });
        if (i >= start)
          entries.push({
            n: b.block.header.number.toString(),
            h: bytesToHex(b.hash),
            logs: found.map(encodeLog),
          });
      }
      changes = { kind, changes: out.slice(-cap) };
    }
    const trail = keepLogs(
      [...cursor.trail.slice(0, kept), ...entries].slice(-FILTER_TRAIL_BLOCKS),
    );
    // Parted below the whole trail with nothing new above: the head is where it stands now.
    if (trail.length === 0)
      trail.push({
        n: head.block.header.number.toString(),
        h: headHash,
        ...(kind === "logs" ? { logs: [] } : {}),
      });
    return {
      changes,
      next: JSON.stringify({ td: head.totalDifficulty.toString(), trail } satisfies ChainCursor),
    };
  }

  /** A pending-transaction filter's transactions after its place in the shared stream. */
  async #transactionChanges(
    cursor: StreamCursor,
  ): Promise<{ changes: FilterChanges; next?: string }> {
    const entries = (await this.#store.run(
      STREAM_AFTER,
      ["pending"],
      [cursor.at, this.#opts.maxChanges],
    )) as [string, string[]][];
    if (entries.length === 0) return { changes: { kind: "transactions", changes: [] } };
    const hashes = entries.map(([, fields]) => hexToBytes(fields[1]!));
    return {
      changes: { kind: "transactions", changes: hashes },
      next: JSON.stringify({ at: entries.at(-1)![0] } satisfies StreamCursor),
    };
  }

  #onNewTransaction(tx: SignedTransaction): void {
    this.#pending.push(bytesToHex(tx.hash));
    if (this.#flushing) return;
    this.#flushing = true;
    setImmediate(() => void this.#flush());
  }

  /** Adds the transactions the pool took in to the shared stream, in batches. */
  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, 500);
      try {
        await this.#store.run(
          ADD_PENDING,
          ["pending", ...batch.map((h) => `seen:${h}`)],
          [PENDING_SEEN_MS, PENDING_STREAM_LENGTH, ...batch],
        );
      } catch (err) {
        this.#log.debug("Pending transactions not shared: Redis did not take them", {
          transactions: batch.length,
          error: (err as Error).message,
        });
      }
    }
    this.#flushing = false;
  }
}

const READ: SharedScript = {
  name: "nodexFilterRead",
  lua: `return redis.call('HMGET', KEYS[1], 'kind', 'query', 'state', 'v')`,
};

const STREAM_AFTER: SharedScript = {
  name: "nodexStreamAfter",
  // The newest ARGV[2] entries after ARGV[1], oldest first.
  lua: `
local out = redis.call('XREVRANGE', KEYS[1], '+', '(' .. ARGV[1], 'COUNT', ARGV[2])
local n = #out
for i = 1, math.floor(n / 2) do out[i], out[n - i + 1] = out[n - i + 1], out[i] end
return out
`,
};

/**
 * The logs a filter's trail keeps in Redis, newest blocks first: a filter matching every log
 * of busy blocks would otherwise rewrite megabytes at each poll. Older entries keep their
 * number and hash; their logs, if a reorganization removes them, come from the replica's copy
 * of the block (a replica that never had it cannot give them).
 */
export const MAX_TRAIL_LOGS = 1_000;

/** `trail` with the logs of its oldest entries dropped past `MAX_TRAIL_LOGS` (newest kept). */
export function keepLogs(trail: TrailEntry[]): TrailEntry[] {
  let kept = 0;
  for (let i = trail.length - 1; i >= 0; i--) {
    const entry = trail[i]!;
    if (entry.logs === undefined) continue;
    kept += entry.logs.length;
    if (kept > MAX_TRAIL_LOGS) trail[i] = { n: entry.n, h: entry.h };
  }
  return trail;
}

const LATEST: BlockSelector = { kind: "tag", tag: "latest" };

function filterKey(id: bigint): string {
  return `filter:${formatId(id)}`;
}

function notFound(): RPCError {
  return new RPCError(RPCErrorCode.FILTER_NOT_FOUND, "filter not found");
}

function bloomMatches(
  bloom: Uint8Array,
  bits: {
    addresses: ReturnType<typeof bloomBits>[];
    topics: (ReturnType<typeof bloomBits>[] | null)[];
  },
): boolean {
  if (bits.addresses.length > 0 && !bits.addresses.some((a) => bloomHasBits(bloom, a)))
    return false;
  for (const position of bits.topics)
    if (position !== null && !position.some((t) => bloomHasBits(bloom, t))) return false;
  return true;
}

function encodeSelector(s: BlockSelector): unknown {
  return s.kind === "number" ? { number: s.number.toString() } : s;
}

function decodeSelector(s: { number?: string } & Record<string, unknown>): BlockSelector {
  return s.number !== undefined
    ? { kind: "number", number: BigInt(s.number) }
    : (s as unknown as BlockSelector);
}

/** A log filter's query as JSON text (hex for bytes, decimal text for numbers). */
export function encodeQuery(query: LogQuery): string {
  const range =
    "blockHash" in query.range
      ? { blockHash: bytesToHex(query.range.blockHash) }
      : { from: encodeSelector(query.range.from), to: encodeSelector(query.range.to) };
  return JSON.stringify({
    range,
    addresses: query.addresses.map(bytesToHex),
    topics: query.topics.map((p) => p?.map(bytesToHex) ?? null),
  });
}

export function decodeQuery(text: string): LogQuery {
  const o = JSON.parse(text) as {
    range: { blockHash?: string; from?: never; to?: never };
    addresses: string[];
    topics: (string[] | null)[];
  };
  const range =
    o.range.blockHash !== undefined
      ? { blockHash: hexToBytes(o.range.blockHash) as Hash32 }
      : { from: decodeSelector(o.range.from!), to: decodeSelector(o.range.to!) };
  return {
    range,
    addresses: o.addresses.map((a) => hexToBytes(a) as Address),
    topics: o.topics.map((p) => p?.map((t) => hexToBytes(t) as Hash32) ?? null),
  } as LogQuery;
}

function encodeLog(found: FoundLog): StoredLog {
  return {
    a: bytesToHex(found.log.address),
    t: found.log.topics.map(bytesToHex),
    d: bytesToHex(found.log.data),
    tx: bytesToHex(found.transactionHash),
    ti: found.transactionIndex,
    li: found.logIndex,
  };
}

function decodeLog(entry: TrailEntry, log: StoredLog): FoundLog {
  return {
    log: {
      address: hexToBytes(log.a) as Address,
      topics: log.t.map((t) => hexToBytes(t) as Hash32),
      data: hexToBytes(log.d),
    },
    blockHash: hexToBytes(entry.h),
    blockNumber: BigInt(entry.n),
    transactionHash: hexToBytes(log.tx),
    transactionIndex: log.ti,
    logIndex: log.li,
  } as FoundLog;
}

function withoutBlock(found: FoundLog): FoundLog {
  return {
    log: found.log,
    blockHash: found.blockHash,
    blockNumber: found.blockNumber,
    transactionHash: found.transactionHash,
    transactionIndex: found.transactionIndex,
    logIndex: found.logIndex,
  };
}
