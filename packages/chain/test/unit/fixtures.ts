import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor } from "@nodex/evm";
import { Bucket, Database } from "@nodex/state";
import {
  type Address,
  type Block,
  type BlockHeader,
  hexToBytes,
  NETWORKS,
  nullLogger,
} from "@nodex/types";
import { afterEach } from "vitest";
import { Chain, type ChainDeps } from "../../src/index.js";
import { LOG_RECORD_KIND, LOG_RECORD_START_KEY } from "../../src/logRecords.js";

/** What the chain tests share: regtest, one executor, a miner address. */
export const network = NETWORKS.regtest;
export const executor = new Executor(network);
export const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;

const dirs: string[] = [];
const dbs: Database[] = [];
const databases = new WeakMap<Chain, Database>();

/** The database a chain of `chainFactory` was opened on. */
export function databaseOf(chain: Chain): Database {
  const db = databases.get(chain);
  if (db === undefined) throw new Error("not a chain of chainFactory");
  return db;
}

/**
 * Deletes every log record and where they start: the database as a node from before the log
 * records left it (a chain must be opened on it again: the store keeps the start once read).
 */
export async function forgetLogRecords(db: Database): Promise<void> {
  const ops: { type: "del"; bucket: Bucket; key: Uint8Array }[] = [
    { type: "del", bucket: Bucket.META, key: LOG_RECORD_START_KEY },
  ];
  for await (const key of db.keys(Bucket.LOG_INDEX))
    if (key[0] === LOG_RECORD_KIND)
      ops.push({ type: "del", bucket: Bucket.LOG_INDEX, key: key.slice() });
  await db.write(ops);
}

/**
 * Registers clean-up after each test of the calling file and returns a factory of regtest
 * chains, each on a database of its own in a temp folder.
 */
export function chainFactory(): (deps?: Partial<ChainDeps>) => Promise<Chain> {
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.close().catch(() => {});
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return async (deps = {}) => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-chain-test-"));
    dirs.push(dir);
    const db = await Database.open(join(dir, "db"));
    dbs.push(db);
    const chain = await Chain.open(network, { db, executor, logger: nullLogger, ...deps });
    databases.set(chain, deps.db ?? db);
    return chain;
  };
}

/** `block` with some header fields changed (and so a different hash). */
export function withHeader(block: Block, change: Partial<BlockHeader>): Block {
  return { ...block, header: { ...block.header, ...change } };
}
