import { DEV_ACCOUNT_BALANCE } from "@nodex/chain";
import { createRPCServer, type Ledger, type RPCServer } from "@nodex/rpc";
import type { Database } from "@nodex/state";
import { bytesToHex, deriveDevAccounts, type Logger, toChecksumAddress } from "@nodex/types";
import { openWallet } from "./accounts/index.js";
import { openChain } from "./chainSetup.js";
import type { NodeConfig } from "./config.js";
import { createServices } from "./services.js";
import { NODEX_VERSION } from "./version.js";

export interface NodexNode {
  readonly config: NodeConfig;
  rpc(): RPCServer | undefined;
  start(): Promise<void>;
  /** Stops intake first, then closes storage. Safe to call twice. */
  stop(): Promise<void>;
}

/** Wires the packages of one node from its config. */
export function createNode(config: NodeConfig, logger: Logger): NodexNode {
  let db: Database | undefined;
  let rpc: RPCServer | undefined;
  let stopping: Promise<void> | undefined;
  let miner: IntervalMiner | undefined;
  return {
    config,
    rpc: () => rpc,
    async start() {
      logger.info("Starting nodex", {
        version: NODEX_VERSION,
        network: config.network.name,
        chainId: config.network.chainId,
        datadir: config.datadir,
      });
      const opened = await openChain(config, logger);
      db = opened.db;
      const { chain, executor } = opened;
      if (config.network.devAccounts) printDevAccounts();
      const wallet = await openWallet(config, logger.child({ module: "accounts" }));
      const services = createServices(config, chain, executor, logger, wallet);
      const ledger = services.ledger;
      if (ledger !== undefined) {
        const journal = await ledger.pool.loadJournal(await ledger.poolHead());
        if (journal.loaded + journal.dropped > 0) {
          logger.info("Loaded the node's own pending transactions", {
            loaded: journal.loaded,
            dropped: journal.dropped,
          });
          for (const reason of journal.reasons)
            logger.warn("Dropped a journaled transaction", { reason });
        }
        // With automine, what came back from the journal is mined now, as if just received.
        if (ledger.automine) await ledger.setMining(true);
      }
      rpc = createRPCServer(config.rpc, { services, logger: logger.child({ module: "rpc" }) });
      await rpc.start();
      if (services.ledger !== undefined && config.mineInterval > 0) {
        miner = startIntervalMiner(services.ledger, config.mineInterval, logger);
      }
    },
    stop() {
      stopping ??= (async () => {
        logger.info("Shutting down");
        await rpc?.stop();
        await miner?.stop();
        await db?.close();
        logger.info("Stopped");
      })();
      return stopping;
    },
  };
}

interface IntervalMiner {
  /** Stops the timer and waits for a block being mined. */
  stop(): Promise<void>;
}

/** Mines a block every `seconds` with the transactions received meanwhile. */
function startIntervalMiner(ledger: Ledger, seconds: number, logger: Logger): IntervalMiner {
  let current: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    current = current.then(() =>
      ledger.minePending().catch((err: unknown) => {
        logger.error("Interval mining failed", { error: (err as Error).message });
      }),
    );
  }, seconds * 1000);
  logger.info("Mining a block at each interval", { seconds });
  return {
    async stop() {
      clearInterval(timer);
      await current;
    },
  };
}

/** The development accounts and their keys, as Hardhat and Anvil print them. */
function printDevAccounts(): void {
  const units = DEV_ACCOUNT_BALANCE / 10n ** 18n;
  const lines = ["", "Accounts", "========", ""];
  deriveDevAccounts().forEach((account, i) => {
    lines.push(`Account #${i}: ${toChecksumAddress(account.address)} (${units} units)`);
    lines.push(`Private Key: ${bytesToHex(account.privateKey)}`);
    lines.push("");
  });
  lines.push("These keys are public: never send real funds to these accounts.", "");
  process.stdout.write(`${lines.join("\n")}\n`);
}
