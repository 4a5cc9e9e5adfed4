import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, type ChainDeps } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import { type Address, hexToBytes, NETWORKS, nullLogger } from "@nodex/types";
import { afterEach } from "vitest";

/** What the miner tests share: regtest, one executor, a miner address. */
export const network = NETWORKS.regtest;
export const executor = new Executor(network);
export const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;

const dirs: string[] = [];
const dbs: Database[] = [];

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
    return Chain.open(network, { db, executor, logger: nullLogger, ...deps });
  };
}
