// First, before the modules it concerns load: how soon V8 optimizes hot code.
import "./tiering.js";
// @nodex/p2p installs the polyfills the p2p stack needs (Promise.withResolvers on Node 20)
// before it loads libp2p; it is loaded only when the node joins a network (`network.ts`).
import { ChainFileError, exportChain, importChain } from "./chainFile.js";
import {
  type ExportCommand,
  helpText,
  type ImportCommand,
  type MineCommand,
  type NodeConfig,
  parseCommandLine,
  UsageError,
} from "./config.js";
import { enableFastPaths } from "./fastPaths.js";
import { runKeys } from "./keys.js";
import { createLogger, type NodeLogger } from "./logger.js";
import { runMiner } from "./miner.js";
import { createNode, type NodexNode } from "./node.js";
import { startSignatureRecovery } from "./signatureRecovery.js";
import { NODEX_VERSION } from "./version.js";

/** Exit codes: 0 clean stop, 1 failure at run time, 2 bad usage. */
async function main(): Promise<number> {
  let command: ReturnType<typeof parseCommandLine>;
  try {
    command = parseCommandLine({
      argv: process.argv.slice(2),
      env: process.env,
      isTTY: process.stderr.isTTY === true,
    });
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`nodex: ${err.message} (see nodex --help)\n`);
      return 2;
    }
    throw err;
  }
  if (command.kind === "help") {
    process.stdout.write(helpText());
    return 0;
  }
  if (command.kind === "version") {
    process.stdout.write(`nodex ${NODEX_VERSION}\n`);
    return 0;
  }
  if (command.kind === "keys") return runKeys(command);
  enableFastPaths();
  if (command.kind === "export" || command.kind === "import") return runChainFile(command);
  if (command.kind === "mine") return runMineCommand(command);
  const { config } = command;
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  const node = createNode(config, logger);

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn("Second signal: exiting without a clean shutdown", { signal });
      process.exit(1);
    }
    logger.info("Signal received", { signal });
    node.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error("Shutdown failed", { err: String(err) });
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  // SIGHUP reloads what can change without a restart, as daemons do; it never ends the node.
  process.on("SIGHUP", () => reload(node, logger));

  try {
    await node.start();
  } catch (err) {
    logger.error("Start-up failed", {
      err: describeStartError(err, config.rpc.host, config.rpc.port),
    });
    await node.stop().catch(() => {});
    return 1;
  }
  return -1;
}

/**
 * Reads the command line, environment and config file again and applies what can change while
 * the node runs: the log level, the API keys and the ban list. Anything wrong is logged and
 * changes nothing; the node goes on as it was.
 */
function reload(node: NodexNode, logger: NodeLogger): void {
  let next: NodeConfig;
  try {
    const command = parseCommandLine({
      argv: process.argv.slice(2),
      env: process.env,
      isTTY: process.stderr.isTTY === true,
    });
    if (command.kind !== "run") return;
    next = command.config;
  } catch (err) {
    logger.error("Reload refused: the settings are not valid; nothing changed", {
      reason: (err as Error).message,
    });
    return;
  }
  const changed = restartOnly(node.config, next);
  try {
    const done = node.reload(next);
    const report = () =>
      logger.info("Reloaded on SIGHUP", {
        logLevel: next.logLevel,
        ...(done.apiKeys === undefined ? {} : { apiKeys: done.apiKeys }),
        ...(done.bans === undefined ? {} : { bannedAddresses: done.bans.manual }),
        ...(changed.length === 0 ? {} : { needRestart: changed }),
      });
    // Written at whichever of the two levels shows it.
    if (logger.isLevelEnabled("info")) {
      report();
      logger.setLevel(next.logLevel);
    } else {
      logger.setLevel(next.logLevel);
      report();
    }
  } catch (err) {
    logger.error("Reload failed; nothing else changed", { reason: (err as Error).message });
  }
}

/** Settings that differ between `now` and `next` and take effect only at a restart. */
function restartOnly(now: NodeConfig, next: NodeConfig): string[] {
  const reloadable = new Set(["logLevel", "apiKeys", "sources"]);
  const flat = (c: NodeConfig) => {
    const { rpc, ...rest } = c;
    const { apiKeys: _keys, ...rpcRest } = rpc;
    return { ...rest, rpc: rpcRest } as Record<string, unknown>;
  };
  const a = flat(now);
  const b = flat(next);
  return Object.keys(b).filter(
    (key) =>
      !reloadable.has(key) && JSON.stringify(a[key], bigints) !== JSON.stringify(b[key], bigints),
  );
}

function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** `nodex export` and `nodex import`: 0 done, 1 refused or failed. */
async function runChainFile(command: ExportCommand | ImportCommand): Promise<number> {
  const { config } = command;
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  startSignatureRecovery(config, logger);
  try {
    if (command.kind === "export") {
      await exportChain(command, logger);
      return 0;
    }
    // The first signal stops the import after the block being written; a second one exits.
    const interrupt = new AbortController();
    const onSignal = () => {
      if (interrupt.signal.aborted) process.exit(1);
      interrupt.abort();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    const summary = await importChain(command, logger, { signal: interrupt.signal });
    return summary.refused === undefined && !summary.interrupted ? 0 : 1;
  } catch (err) {
    if (!(err instanceof ChainFileError)) throw err;
    process.stderr.write(`nodex ${command.kind}: ${err.message}\n`);
    return 1;
  }
}

/** `nodex mine`: mines until stopped (SIGINT, SIGTERM) or `--max-blocks` accepted blocks. */
async function runMineCommand(command: MineCommand): Promise<number> {
  const stop = new AbortController();
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) process.exit(1);
    stop.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  log(`mining for ${command.rpc} with ${command.threads} thread(s)`);
  try {
    const report = await runMiner({ ...command, log, signal: stop.signal });
    log(
      `stopped: ${report.accepted} blocks accepted, ${report.refused} refused, ${report.hashes} hashes`,
    );
    return 0;
  } catch (err) {
    log(`mining failed: ${(err as Error).message}`);
    return 1;
  }
}

function describeStartError(err: unknown, rpcHost: string, rpcPort: number): string {
  const code = (err as NodeJS.ErrnoException).code;
  // The listener that failed (the RPC port or --ws-port), as the error names it.
  const { address, port: errPort } = err as { address?: unknown; port?: unknown };
  const host = typeof address === "string" ? address : rpcHost;
  const port = typeof errPort === "number" ? errPort : rpcPort;
  if (code === "EADDRINUSE") return `cannot listen on ${host}:${port}: address already in use`;
  if (code === "EACCES") return `cannot listen on ${host}:${port}: permission denied`;
  if (code === "EADDRNOTAVAIL") return `cannot listen on ${host}:${port}: address not available`;
  return err instanceof Error ? err.message : String(err);
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(
      `nodex: unexpected error: ${err instanceof Error ? err.stack : String(err)}\n`,
    );
    process.exit(1);
  },
);
