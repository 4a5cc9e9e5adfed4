import { join } from "node:path";
import { type ChainAnchor, DEV_ACCOUNT_BALANCE } from "@nodex/chain";
import type { P2PService } from "@nodex/p2p";
import {
  createMetricsServer,
  createRPCServer,
  type KeyStore,
  keyRegistryPath,
  keyScope,
  keyUsagePath,
  MemoryLimitStore,
  type MetricsServer,
  NodeMetrics,
  parseKeyFile,
  parseKeyRegistry,
  RedisStore,
  type RPCServer,
  type RPCServices,
  readKeyRegistry,
  readUsageFile,
  SharedKeyStore,
  SharedLimitStore,
  utcDay,
  WatchedKeyFile,
  writeUsageFile,
} from "@nodex/rpc";
import { type Database, StorageMonitor } from "@nodex/state";
import {
  bytesToHex,
  deriveDevAccounts,
  hexToBytes,
  type Logger,
  toChecksumAddress,
} from "@nodex/types";
import { AccessLogWriter } from "./accessLog.js";
import { openWallet } from "./accounts/index.js";
import { openChain } from "./chainSetup.js";
import type { NodeConfig } from "./config.js";
import { type OpenedFork, openFork, refuseForkDatadir, UpstreamHistory } from "./fork.js";
import { HeavyRequestPool } from "./heavyPool.js";
import { registerNodeGauges } from "./metrics.js";
import { createNetwork, peersView, scoringView } from "./network.js";
import { createCore, type NodeCore } from "./services.js";
import { startSignatureRecovery } from "./signatureRecovery.js";
import { loadStateFile, saveStateFile } from "./stateFile.js";
import { NODEX_VERSION } from "./version.js";

export interface NodexNode {
  readonly config: NodeConfig;
  rpc(): RPCServer | undefined;
  /** The metrics listener's address (`--metrics-addr`), once started. */
  metricsAddress(): { host: string; port: number } | undefined;
  start(): Promise<void>;
  /**
   * Applies what can change without a restart (SIGHUP): the API keys and the ban list read
   * again. Returns what was reloaded; throws with the reason when a part cannot be.
   */
  reload(next: NodeConfig): { apiKeys?: number; bans?: { manual: number; punished: number } };
  /** Stops intake first, then closes storage. Safe to call twice. */
  stop(): Promise<void>;
}

/** What a node is started with beside its config. */
export interface NodeStartOptions {
  /**
   * The block of an upstream network the chain starts on instead of genesis, for a new
   * datadir (a fork of that network); a datadir made on another is refused.
   */
  readonly anchor?: ChainAnchor;
}

/** Wires the packages of one node from its config. */
export function createNode(
  config: NodeConfig,
  logger: Logger,
  opts: NodeStartOptions = {},
): NodexNode {
  let db: Database | undefined;
  let rpc: RPCServer | undefined;
  let stopping: Promise<void> | undefined;
  let core: NodeCore | undefined;
  let p2p: P2PService | undefined;
  let storage: StorageMonitor | undefined;
  let heavy: HeavyRequestPool | undefined;
  let keyFiles: KeyStore[] = [];
  let usage: { timer: NodeJS.Timeout; write: () => void } | undefined;
  let shared: RedisStore | undefined;
  let accessLog: AccessLogWriter | undefined;
  let metricsServer: MetricsServer | undefined;
  let metricsBound: { host: string; port: number } | undefined;
  let sharedLimits: SharedLimitStore | undefined;
  let fork: OpenedFork | undefined;
  return {
    config,
    rpc: () => rpc,
    metricsAddress: () => metricsBound,
    reload(next) {
      const done: ReturnType<NodexNode["reload"]> = {};
      if (rpc !== undefined) {
        rpc.setApiKeys(next.rpc.apiKeys);
        done.apiKeys = next.rpc.apiKeys.length;
      }
      if (p2p !== undefined) done.bans = p2p.reloadBans();
      return done;
    },
    async start() {
      logger.info("Starting nodex", {
        version: NODEX_VERSION,
        network: config.network.name,
        chainId: config.network.chainId,
        datadir: config.datadir,
      });
      startSignatureRecovery(config, logger);
      if (config.fork !== undefined) fork = await openFork(config, logger);
      else if (opts.anchor === undefined) refuseForkDatadir(config.datadir);
      const opened = await openChain(
        config,
        logger,
        opts.anchor ?? fork?.anchor,
        fork === undefined ? undefined : (database) => fork!.source(database),
      );
      // The chain took the fork point: the datadir keeps it from now on.
      await fork?.keep();
      db = opened.db;
      const { chain, executor, rules } = opened;
      // A new fork's development accounts get their funds on top of the upstream's state, as
      // Anvil's and Hardhat's forks give them: an edit of the fork block's state, no block.
      const fundDevAccounts = async () => {
        await chain.editHeadState(async (state) => {
          for (const account of deriveDevAccounts())
            await state.setBalance(account.address, DEV_ACCOUNT_BALANCE);
        });
      };
      if (
        fork !== undefined &&
        chain.head.block.header.number === fork.point.number &&
        chain.stateEdits().size === 0
      )
        await fundDevAccounts();
      // Free space below the minimum, or a failed write: the node refuses what needs a write
      // (transactions, blocks), serves reads, and takes writes again once a probe lands.
      storage = new StorageMonitor(
        db,
        { minFreeBytes: config.minFreeBytes },
        logger.child({ module: "storage" }),
      );
      await storage.start();
      // On an anchored chain they hold what the upstream's state gives them, not genesis funds.
      if (config.network.devAccounts)
        printDevAccounts(fork !== undefined || !chain.firstBlock.anchored);
      const wallet = await openWallet(config, logger.child({ module: "accounts" }));
      // A reset goes back to the fork block's state: the funds are given again on top of it.
      core = createCore(
        config,
        chain,
        executor,
        logger,
        wallet,
        fork === undefined ? undefined : fundDevAccounts,
      );
      if (config.stateFile !== undefined)
        await loadStateFile(config.stateFile, core.producer, logger.child({ module: "state" }));
      // The transactions kept in the journal come back; automine mines them, an interval starts.
      await core.producer.start();
      const p2pConfig = config.p2p;
      if (p2pConfig !== undefined) {
        const producer = core.producer;
        p2p = await createNetwork(
          { ...config, p2p: p2pConfig },
          chain,
          rules,
          core.admission,
          (raw) => producer.sendTransaction(raw),
          logger,
        );
        try {
          await p2p.start();
        } catch (err) {
          throw new Error(describeP2PStartError(err, p2pConfig.host, p2pConfig.port), {
            cause: err,
          });
        }
      }
      const network = p2p;
      if (config.rpcWorkerThreads > 0) {
        heavy = new HeavyRequestPool(
          { threads: config.rpcWorkerThreads, maxQueued: config.rpcWorkerQueue },
          {
            dbPath: join(config.datadir, "db"),
            network: config.network,
            stateWindow: config.stateWindow === "all" ? undefined : config.stateWindow,
            caches: config.caches,
            signatureRecovery: config.signatureRecovery,
          },
          {
            db: opened.db,
            chain,
            logger: logger.child({ module: "rpc-workers" }),
            coinbase: core.services.mining.coinbase,
          },
        );
        const pool = heavy;
        opened.db.onReopen({ beforeClose: () => pool.pause(), afterOpen: () => pool.resume() });
      }
      const services: RPCServices = {
        ...core.services,
        ...(heavy === undefined ? {} : { heavy }),
        peers: peersView(network),
        ...(network === undefined
          ? {}
          : {
              scoring: scoringView(network),
              events: {
                ...core.services.events!,
                onSyncingChange: (listener) => network.sync.onProgress(listener),
              },
            }),
      };
      const rpcLog = logger.child({ module: "rpc" });
      if (config.redis !== undefined) {
        // The node starts without Redis too: the shared parts answer -32002 until it is back.
        shared = new RedisStore(
          { url: config.redis, network: config.network.name },
          logger.child({ module: "redis" }),
        );
        await shared.connect();
      }
      // The registry `nodex keys` writes (in Redis with --redis, else in the datadir), and the
      // file a deployment tool provisions: followed while the node runs. Either one with keys
      // makes the node hosted.
      const registryPath = keyRegistryPath(config.datadir);
      let registry: KeyStore;
      if (shared === undefined) {
        const file = new WatchedKeyFile(registryPath, {
          parse: parseKeyRegistry,
          logger: rpcLog,
          optional: true,
        }).load();
        registry = file;
      } else {
        registry = await new SharedKeyStore(shared, rpcLog).start();
        if (registry.unavailable?.() !== undefined)
          rpcLog.warn(
            "API keys in Redis not read at start-up: keyed requests are refused until they are; give replicas of a hosted endpoint --rpc-hosted",
          );
        const left = readKeyRegistry(registryPath).keys.filter((k) => k.revoked === undefined);
        if (left.length > 0)
          rpcLog.warn(
            "The datadir's API key registry is not served with --redis: create its keys again with nodex keys create --redis",
            { path: registryPath, active: left.length },
          );
      }
      const provisioned =
        config.apiKeyFile === undefined
          ? undefined
          : new WatchedKeyFile(config.apiKeyFile, {
              parse: parseKeyFile,
              logger: rpcLog,
              optional: false,
            }).load();
      const hosted =
        config.rpc.hosted === true || provisioned !== undefined || registry.active() > 0;
      // A local node ignores keys: it follows no file (keys issued later need --hosted).
      if (hosted) {
        if (registry instanceof WatchedKeyFile) registry.watch();
        provisioned?.watch();
      }
      keyFiles = provisioned === undefined ? [registry] : [registry, provisioned];
      const usagePath = keyUsagePath(config.datadir);
      let limits: MemoryLimitStore | SharedLimitStore;
      if (shared === undefined) {
        const memory = new MemoryLimitStore();
        for (const [id, used] of readUsageFile(usagePath)) {
          if (used.day === utcDay(Date.now())) memory.seed(keyScope(id), used);
        }
        limits = memory;
      } else {
        // Redis counts every replica's units: the usage file is not read back.
        sharedLimits = new SharedLimitStore(shared, logger.child({ module: "limits" })).start();
        limits = sharedLimits;
      }
      const metrics = config.metricsAddr === undefined ? undefined : new NodeMetrics();
      if (metrics !== undefined) {
        registerNodeGauges(metrics, {
          chain,
          pool: core.admission.pool,
          p2p: network,
          datadir: config.datadir,
          chainId: config.network.chainId,
        });
      }
      if (config.accessLog !== undefined) {
        accessLog = await AccessLogWriter.open(
          config.accessLog,
          logger.child({ module: "access-log" }),
        );
      }
      rpc = createRPCServer(
        { ...config.rpc, hosted },
        {
          services,
          logger: rpcLog,
          keys: keyFiles,
          limits,
          ...(shared === undefined ? {} : { shared }),
          ...(metrics === undefined ? {} : { metrics }),
          ...(accessLog === undefined ? {} : { accessLog }),
          ...(fork === undefined ? {} : { history: forkHistory(fork, services, opened.db) }),
        },
      );
      await rpc.start();
      if (hosted) {
        // What `nodex keys list` shows of each key's use; written by the node alone.
        let written = "";
        let ticks = 0;
        const write = () => {
          if (++ticks % 60 === 0) limits.prune(Date.now());
          const now = JSON.stringify([...limits.entries()].filter(([s]) => s.startsWith("key:")));
          if (now === written) return;
          try {
            writeUsageFile(usagePath, limits);
            written = now;
          } catch (err) {
            rpcLog.warn("Writing the API key usage failed", {
              path: usagePath,
              error: (err as Error).message,
            });
          }
        };
        const timer = setInterval(write, 1000);
        timer.unref();
        usage = { timer, write };
      }
      if (metrics !== undefined && config.metricsAddr !== undefined) {
        const server = createMetricsServer(metrics, {
          health: rpc.health,
          readiness: rpc.readiness,
        });
        const { host, port } = config.metricsAddr;
        let bound: { host: string; port: number };
        try {
          bound = await server.listen(host, port);
        } catch (err) {
          throw new Error(describeListenError(err, "the metrics listener", host, port), {
            cause: err,
          });
        }
        metricsServer = server;
        metricsBound = bound;
        logger.info("Metrics listening", {
          url: `http://${urlHost(bound.host)}:${bound.port}/metrics`,
        });
      }
    },
    stop() {
      stopping ??= (async () => {
        logger.info("Shutting down");
        await metricsServer?.close();
        await rpc?.stop();
        if (usage !== undefined) {
          clearInterval(usage.timer);
          usage.write();
        }
        for (const file of keyFiles) file.close();
        await sharedLimits?.close();
        await shared?.close();
        // After the RPC listeners: every answer given has its line.
        await accessLog?.close();
        await p2p?.stop().catch((err: unknown) => {
          logger.error("Stopping the network failed", { error: (err as Error).message });
        });
        await core?.producer.stop();
        if (config.stateFile !== undefined && core !== undefined) {
          await saveStateFile(
            config.stateFile,
            core.producer,
            logger.child({ module: "state" }),
          ).catch((err: unknown) => {
            logger.error("Writing the state file failed", {
              path: config.stateFile,
              error: (err as Error).message,
            });
          });
        }
        // The worker threads share the database: they end before it closes.
        await heavy?.stop();
        fork?.upstream.close();
        // The journal keeps only the transactions still waiting.
        await core?.admission.pool.closeJournal().catch((err: unknown) => {
          logger.error("Writing the txpool journal failed", { error: (err as Error).message });
        });
        storage?.stop();
        await db?.close();
        logger.info("Stopped");
      })();
      return stopping;
    },
  };
}

/** Why the peer-to-peer listener did not start, in the operator's terms. */
function describeP2PStartError(err: unknown, host: string, port: number): string {
  const text = err instanceof Error ? err.message : String(err);
  const where = `the peer-to-peer listener cannot listen on ${host}:${port}`;
  if (text.includes("EADDRINUSE"))
    return `${where}: address already in use (another node? set --p2p-port, or run alone with --no-p2p)`;
  if (text.includes("EADDRNOTAVAIL"))
    return `${where}: address not available on this machine (set --p2p-host)`;
  if (text.includes("EACCES")) return `${where}: permission denied`;
  return `${where}: ${text}`;
}

/** Why a listener did not start, in the operator's terms. */
function describeListenError(err: unknown, what: string, host: string, port: number): string {
  const text = err instanceof Error ? err.message : String(err);
  const where = `${what} cannot listen on ${host}:${port}`;
  if (text.includes("EADDRINUSE")) return `${where}: address already in use`;
  if (text.includes("EADDRNOTAVAIL")) return `${where}: address not available on this machine`;
  if (text.includes("EACCES")) return `${where}: permission denied`;
  return `${where}: ${text}`;
}

function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/** A fork's history: the upstream's answers up to the fork block; the local chain's after. */
function forkHistory(fork: OpenedFork, services: RPCServices, db: Database): UpstreamHistory {
  const reader = services.reader;
  return new UpstreamHistory(
    fork.upstream,
    fork.point.number,
    {
      head: () => services.chain.blockNumber(),
      blockNumber: async (hash) =>
        (await reader?.blockByHash(hexToBytes(hash)))?.block.header.number ?? undefined,
      hasTransaction: async (hash) => {
        const bytes = hexToBytes(hash);
        if (reader === undefined) return false;
        return (
          (await reader.transaction(bytes)) !== null ||
          reader.pendingTransaction(bytes) !== undefined
        );
      },
    },
    db,
    fork.point.exact,
    fork.urls,
    fork.point.hash,
  );
}

/** The development accounts and their keys, as Hardhat and Anvil print them. */
function printDevAccounts(funded: boolean): void {
  const units = DEV_ACCOUNT_BALANCE / 10n ** 18n;
  const lines = ["", "Accounts", "========", ""];
  deriveDevAccounts().forEach((account, i) => {
    const balance = funded ? ` (${units} units)` : "";
    lines.push(`Account #${i}: ${toChecksumAddress(account.address)}${balance}`);
    lines.push(`Private Key: ${bytesToHex(account.privateKey)}`);
    lines.push("");
  });
  lines.push("These keys are public: never send real funds to these accounts.", "");
  process.stdout.write(`${lines.join("\n")}\n`);
}
