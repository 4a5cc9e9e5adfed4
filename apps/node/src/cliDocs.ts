import { COMMAND_FLAGS, COMMANDS, commandSettingFlags, OPTIONS } from "./options.js";

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
  const subcommands = COMMANDS.flatMap((c) => [
    `### \`nodex ${c.name}\``,
    "",
    "```",
    `nodex ${c.name} ${c.synopsis}`,
    "```",
    "",
    `${c.description[0]!.toUpperCase()}${c.description.slice(1)}.`,
    "",
    ...(c.options.length === 0
      ? []
      : [
          "| flag | meaning |",
          "|---|---|",
          ...c.options.map(
            (o) => `| \`${o.flag}${o.valueName ? ` ${o.valueName}` : ""}\` | ${o.description} |`,
          ),
          "",
        ]),
  ]);
  return [
    "# The `nodex` command",
    "",
    "<!-- Generated from apps/node/src/options.ts by `npm run docs:cli -w apps/node`; do not edit by hand. -->",
    "",
    "```",
    "nodex [--mainnet | --testnet | --devnet | --regtest | --network NAME] [options]",
    ...COMMANDS.map((c) => `nodex ${c.name} ${c.synopsis}`),
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
    "## Commands",
    "",
    "A command is the first word that is not an option. The commands work on the datadir's database",
    "while no node runs on it. They take these options of the node, as flags, environment variables",
    "or config keys as the node does:",
    "",
    `${commandSettingFlags()
      .map((f) => `\`${f}\``)
      .join(", ")}.`,
    "",
    "Other flags of the node are refused; its other settings in the environment or the config file",
    "are ignored. The commands log warnings and errors only unless `--log-level` says otherwise, and",
    "print their progress and results on standard error. See [operations.md](operations.md) for",
    "moving a chain between nodes.",
    "",
    ...subcommands,
    "## Exit codes",
    "",
    "| code | meaning |",
    "|---|---|",
    "| 0 | stopped cleanly (SIGINT or SIGTERM), or `--help` / `--version`, or a command done |",
    "| 1 | failed at run time (for example the RPC port is taken), or a command failed or a block was refused |",
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
