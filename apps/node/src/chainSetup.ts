import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  Chain,
  type ChainAnchor,
  type ConsensusRules,
  mergedMiningRules,
  SYNTHETIC_SEALER,
} from "@nodex/chain";
import { EVM_HARDFORK, Executor, installedEvmVersion } from "@nodex/evm";
import { Database, type ForkSource } from "@nodex/state";
import type { Logger } from "@nodex/types";
import type { NodeConfig } from "./config.js";
import { consoleLogPrinter, printsConsoleLog } from "./consoleLog.js";

/** The node's database, executor and chain, opened as the config says. */
export interface OpenedChain {
  readonly db: Database;
  readonly executor: Executor;
  readonly chain: Chain;
  /** The consensus rules the chain checks blocks with (the network checks headers with them). */
  readonly rules: ConsensusRules;
}

/**
 * Opens (creating when new) the database under the datadir and the chain in it, with the
 * network's consensus rules. The node and the chain-file commands open the chain this way.
 * `anchor`: the block of an upstream network a new chain starts on instead of genesis (a fork
 * of that network); a datadir whose chain starts elsewhere is refused (`CHAIN_OTHER_CHAIN`).
 * `fork`: on a forked chain, makes the source of the upstream's state on the opened database.
 */
export async function openChain(
  config: NodeConfig,
  logger: Logger,
  anchor?: ChainAnchor,
  fork?: (db: Database) => ForkSource,
): Promise<OpenedChain> {
  await mkdir(config.datadir, { recursive: true });
  // Worker threads serving heavy requests open the same database (see heavyPool.ts).
  const db = await Database.open(join(config.datadir, "db"), {
    multithreading: config.rpcWorkerThreads > 0,
  });
  try {
    // Contracts' console.log lines, on development networks (the worker threads' executors
    // replay traces only, and print nothing).
    const printer = printsConsoleLog(config.network) ? consoleLogPrinter(logger) : undefined;
    const executor = new Executor(
      config.network,
      printer === undefined ? {} : { consoleLog: printer.sink },
    );
    if (executor.fastPaths.on)
      logger.info("EVM", {
        library: `@ethereumjs/evm ${installedEvmVersion()}`,
        hardfork: EVM_HARDFORK,
        fastPaths: "on",
      });
    else
      logger.warn("EVM fast paths off: every transaction and call runs on @ethereumjs/evm alone", {
        reason: executor.fastPaths.reason,
      });
    // Every network checks merged-mining proofs; development networks seal their own blocks
    // with proofs of synthetic Bitcoin blocks, so there is no bypass anywhere.
    const rules = mergedMiningRules(
      config.network,
      config.minDifficulty === undefined ? {} : { minDifficulty: config.minDifficulty },
    );
    const chain = await Chain.open(config.network, {
      db,
      executor,
      logger: logger.child({ module: "chain" }),
      ...(config.stateWindow === "all" ? {} : { stateWindow: config.stateWindow }),
      caches: {
        blocks: config.caches.blocks,
        headers: config.caches.headers,
        receipts: config.caches.receipts,
      },
      trieNodeCache: config.caches.trieNodes,
      rules,
      ...(config.network.devAccounts ? { sealer: SYNTHETIC_SEALER } : {}),
      ...(anchor === undefined ? {} : { anchor }),
      ...(fork === undefined ? {} : { fork: fork(db) }),
    });
    // The transactions of blocks that left the chain print their lines again when they run again.
    if (printer !== undefined)
      chain.onHeadChange(({ removed }) =>
        printer.forget(removed.flatMap((b) => b.block.transactions.map((tx) => tx.hash))),
      );
    return { db, executor, chain, rules };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
