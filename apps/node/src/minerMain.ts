import "./polyfills.js";
import { parseArgs } from "node:util";
import { runMiner } from "./miner.js";

const USAGE = `Usage: nodex-miner [--rpc URL] [--max-blocks N] [--poll-ms MS]

The reference CPU merged miner: gets work from a Nodex node (mnr_getWork), mines a Bitcoin
block whose coinbase commits to it, and submits it (mnr_submitBitcoinBlock). The node must
serve the mnr module (regtest and devnet do; elsewhere start it with --miner).

  --rpc URL         the node's JSON-RPC URL (default http://127.0.0.1:4444)
  --max-blocks N    stop after N accepted blocks (default 0: run until stopped)
  --poll-ms MS      ask for new work this often while mining (default 2000)
  --help            print this help
`;

async function main(): Promise<number> {
  let values: { rpc: string; "max-blocks": string; "poll-ms": string; help: boolean };
  try {
    values = parseArgs({
      options: {
        rpc: { type: "string", default: "http://127.0.0.1:4444" },
        "max-blocks": { type: "string", default: "0" },
        "poll-ms": { type: "string", default: "2000" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
    }).values as typeof values;
  } catch (err) {
    process.stderr.write(`nodex-miner: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const usage = (message: string) => {
    process.stderr.write(`nodex-miner: ${message} (see nodex-miner --help)\n`);
    return 2;
  };
  if (!/^https?:\/\/\S+$/.test(values.rpc)) return usage(`--rpc ${values.rpc} is not an http URL`);
  if (!/^\d{1,9}$/.test(values["max-blocks"]))
    return usage(`--max-blocks ${values["max-blocks"]} is not a number of blocks`);
  if (!/^\d{2,7}$/.test(values["poll-ms"]))
    return usage(`--poll-ms ${values["poll-ms"]} is not a time in milliseconds (10 or more)`);

  const stop = new AbortController();
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) process.exit(1);
    stop.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  log(`mining for ${values.rpc}`);
  try {
    const report = await runMiner({
      rpc: values.rpc,
      maxBlocks: Number(values["max-blocks"]),
      pollMs: Number(values["poll-ms"]),
      log,
      signal: stop.signal,
    });
    log(
      `stopped: ${report.accepted} blocks accepted, ${report.rejected} refused, ${report.hashes} hashes`,
    );
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).message}`);
    return 1;
  }
}

main().then((code) => process.exit(code));
