import { COMMAND_FLAGS, OPTIONS } from "./options.js";

/** `docs/cli.md`, generated from the option table (`npm run docs:cli -w apps/node`). */
export function cliMarkdown(): string {
  const rows = OPTIONS.map((o) => {
    const flags = [
      `\`${o.flag}${o.valueName ? ` ${o.valueName}` : ""}\``,
      ...Object.keys(o.aliases ?? {}).map((a) => `\`${a}\``),
    ];
    return `| ${flags.join(", ")} | \`${o.env}\` | \`${o.key}\`${o.list ? " (list)" : ""} | ${o.defaultText} | ${o.description} |`;
  });
  const commands = Object.entries(COMMAND_FLAGS).map(([flag, text]) => `| \`${flag}\` | ${text} |`);
  return [
    "# The `nodex` command",
    "",
    "<!-- Generated from apps/node/src/options.ts by `npm run docs:cli -w apps/node`; do not edit by hand. -->",
    "",
    "```",
    "nodex [--mainnet | --testnet | --devnet | --regtest | --network NAME] [options]",
    "```",
    "",
    "Bare `nodex` joins mainnet; `npm start` runs a regtest node on http://127.0.0.1:4444.",
    "",
    "## Where settings come from",
    "",
    "Every option can be given as a flag, as an environment variable, or as a key of the JSON file",
    "named by `--config`. When a setting is given in several places, the first of these wins:",
    "",
    "1. the command-line flag (`--rpc-port 8545` or `--rpc-port=8545`);",
    "2. the environment variable (`NODEX_RPC_PORT=8545`);",
    '3. the config file (`{"rpcPort": 8545}`);',
    "4. the network preset (for example the modules and CORS origins of regtest);",
    "5. the built-in default.",
    "",
    "List settings take repeated flags or commas (`--api-key A --api-key B`, `--rpc-modules eth,net`),",
    "a comma-separated environment variable, or a JSON array in the file.",
    "An unknown flag, an unknown config key or a bad value stops the node with exit code 2 and one",
    "line naming the problem.",
    "",
    "## Options",
    "",
    "| flag | environment | config key | default | meaning |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    "| command | meaning |",
    "|---|---|",
    ...commands,
    "",
    "## Exit codes",
    "",
    "| code | meaning |",
    "|---|---|",
    "| 0 | stopped cleanly (SIGINT or SIGTERM), or `--help` / `--version` |",
    "| 1 | failed at run time (for example the RPC port is taken) |",
    "| 2 | bad usage: unknown option, bad value, unreadable config file |",
    "",
    "A second SIGINT or SIGTERM during shutdown exits at once with code 1.",
    "",
    "## Logs",
    "",
    'Logs go to standard error, one line per event: JSON (`{"time","level","msg",...context}`) or a',
    "pretty line. The default format is pretty on a terminal and JSON otherwise.",
    "",
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(cliMarkdown());
