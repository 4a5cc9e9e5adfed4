import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, type MinedBlock } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import {
  type Address,
  deriveDevAccounts,
  hexToBytes,
  type LogContext,
  type Logger,
  type LogLevel,
  NETWORKS,
  signTransaction,
} from "@nodex/types";
import { afterEach } from "vitest";
import type { ChainSource } from "../../src/chainSource.js";
import { P2PNetwork, type P2PNetworkDeps } from "../../src/network.js";
import { NodeKey } from "../../src/nodeKey.js";
import type { P2POptions } from "../../src/options.js";

export const network = NETWORKS.regtest;
const executor = new Executor(network);
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;
const [alice] = deriveDevAccounts();
const BOB = hexToBytes("0x00000000000000000000000000000000000000bb") as Address;

export interface LogRecord {
  readonly level: LogLevel;
  readonly msg: string;
  readonly ctx: LogContext;
}

/** A logger that keeps every record (children share the list). */
export function recordingLogger(records: LogRecord[] = []): Logger & { records: LogRecord[] } {
  const at =
    (level: LogLevel) =>
    (msg: string, ctx: LogContext = {}) =>
      records.push({ level, msg, ctx });
  const logger = {
    records,
    error: at("error"),
    warn: at("warn"),
    info: at("info"),
    debug: at("debug"),
    trace: at("trace"),
    child: () => logger,
    isLevelEnabled: () => true,
  };
  return logger;
}

/** A chain source with nothing but a genesis block. */
export function emptySource(genesisHash: Uint8Array = new Uint8Array(32).fill(7)): ChainSource {
  return {
    genesisHash,
    head: () => ({ hash: genesisHash, number: 0n, totalDifficulty: 1n }),
    headerByNumber: async () => undefined,
    headerByHash: async () => undefined,
    bodyByHash: async () => undefined,
    receiptsByHash: async () => undefined,
    stateItems: async (items) => items.map(() => undefined),
  };
}

const dirs: string[] = [];
const dbs: Database[] = [];
const networks: P2PNetwork[] = [];

/** Stops the networks and closes the chains a test started, after each test of the file. */
export function cleanUp(): void {
  afterEach(async () => {
    await Promise.all(networks.splice(0).map((n) => n.stop()));
    for (const db of dbs.splice(0)) await db.close().catch(() => {});
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
}

/** An empty LevelDB in a temp dir, closed and removed after the test. */
export async function tempDatabase(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-db-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return db;
}

/** The address of the `i`th account `chainWithState` funds. */
export function fundedAddress(i: number): Address {
  const to = new Uint8Array(20);
  to[0] = 0x11;
  to[18] = i >> 8;
  to[19] = i & 0xff;
  return to as Address;
}

/** A regtest chain on a temp LevelDB: `blocks` mined blocks, each with a transfer. */
export async function chainWithBlocks(blocks: number): Promise<{
  chain: Chain;
  mined: MinedBlock[];
}> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-chain-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  const chain = await Chain.open(network, { db, executor, logger: recordingLogger() });
  const mined: MinedBlock[] = [];
  for (let i = 0; i < blocks; i++) {
    const tx = signTransaction(
      {
        nonce: BigInt(i),
        gasPrice: 1n,
        gasLimit: 21_000n,
        to: BOB,
        value: 1n,
        data: new Uint8Array(),
      },
      alice!.privateKey,
      network.chainId,
    );
    mined.push(await chain.mine([tx], { coinbase: MINER, timestamp: 1_000n + BigInt(i) }));
  }
  return { chain, mined };
}

/**
 * Runtime code that returns 42, behind init code that stores 42 in slot 0: a contract with code
 * and a storage trie.
 */
const RUNTIME = hexToBytes("0x602a60005260206000f3");
const DEPLOY = hexToBytes(`0x602a600055600a6011600039600a6000f3${"602a60005260206000f3"}`);
/** Init code that returns the 24,000 bytes after it: a contract whose code is large. */
const BIG_RUNTIME = Uint8Array.from({ length: 24_000 }, (_, i) => (i % 7 === 0 ? 0x5b : 0x00));
const DEPLOY_BIG = Uint8Array.from([
  ...hexToBytes("0x615dc0600e600039615dc06000f3"),
  ...BIG_RUNTIME,
]);

/**
 * A regtest chain on a temp LevelDB whose state holds `accounts` funded accounts and a
 * contract with code and storage (block 1), then `blocks` more blocks of one transfer each.
 */
export async function chainWithState(
  accounts: number,
  blocks: number,
): Promise<{
  chain: Chain;
  db: Database;
  mined: MinedBlock[];
  runtime: Uint8Array;
  bigRuntime: Uint8Array;
  /** Mines `count` more blocks of one transfer each. */
  more(count: number): Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-state-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  const chain = await Chain.open(network, { db, executor, logger: recordingLogger() });
  const sign = (nonce: number, to: Address | null, data = new Uint8Array()) =>
    signTransaction(
      {
        nonce: BigInt(nonce),
        gasPrice: 1n,
        gasLimit: to === null ? 6_000_000n : 21_000n,
        to,
        value: to === null ? 0n : 1n,
        data,
      },
      alice!.privateKey,
      network.chainId,
    );
  let nonce = 0;
  const first = [sign(nonce++, null, DEPLOY), sign(nonce++, null, DEPLOY_BIG)];
  for (let i = 0; i < accounts; i++) first.push(sign(nonce++, fundedAddress(i)));
  const mined: MinedBlock[] = [];
  const perBlock = 150;
  for (let i = 0; i < first.length; i += perBlock)
    mined.push(
      await chain.mine(first.slice(i, i + perBlock), {
        coinbase: MINER,
        timestamp: 1_000n + BigInt(mined.length),
      }),
    );
  const more = async (count: number) => {
    for (let i = 0; i < count; i++)
      mined.push(
        await chain.mine([sign(nonce++, BOB)], {
          coinbase: MINER,
          timestamp: 1_000n + BigInt(mined.length),
        }),
      );
  };
  await more(blocks);
  return { chain, db, mined, runtime: RUNTIME, bigRuntime: BIG_RUNTIME, more };
}

/** A started network on `host`, port 0, with a fresh key and a recording logger. */
export async function startNode(
  host: string,
  chain: ChainSource,
  opts: Partial<P2POptions> = {},
  deps: Partial<P2PNetworkDeps> = {},
): Promise<P2PNetwork & { records: LogRecord[] }> {
  const logger = recordingLogger();
  const node = await P2PNetwork.create(
    { networkId: network.chainId, host, port: 0, ...opts },
    { key: await NodeKey.ephemeral(), chain, logger, ...deps },
  );
  networks.push(node);
  await node.start();
  return Object.assign(node, { records: logger.records });
}

/** Resolves once `predicate` holds, polling; fails the test after `timeoutMs`. */
export async function eventually(
  predicate: () => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
