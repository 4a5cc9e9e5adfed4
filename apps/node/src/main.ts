// First, before the modules it concerns load: how soon V8 optimizes hot code.
import "./tiering.js";
// @nodex/p2p installs the polyfills the p2p stack needs (Promise.withResolvers on Node 20)
// before it loads libp2p.
import { ChainFileError, exportChain, importChain } from "./chainFile.js";
import {
  type ExportCommand,
  helpText,
  type ImportCommand,
  type MineCommand,
  parseCommandLine,
  UsageError,
} from "./config.js";
import { createLogger } from "./logger.js";
import { runMiner } from "./miner.js";
import { createNode } from "./node.js";
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
