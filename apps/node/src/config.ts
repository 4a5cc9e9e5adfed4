import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { defaultRPCOptions, type HttpLayer, type RPCOptions } from "@nodex/rpc";
import {
  type LogLevel,
  type ModuleName,
  NETWORKS,
  type NetworkName,
  type NetworkPreset,
} from "@nodex/types";
import { COMMAND_FLAGS, OPTIONS, type OptionDef } from "./options.js";

/** A mistake in the command line, environment or config file: exit 2 with the message. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export type LogFormat = "json" | "pretty";

/** The validated, frozen settings of one node. Each package gets its slice. */
export interface NodeConfig {
  readonly network: NetworkPreset;
  readonly datadir: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Mining beneficiary; `undefined` means the network's default. */
  readonly coinbase: string | undefined;
  /** Blocks whose state is kept, counting back from the head; `"all"` keeps every block's. */
  readonly stateWindow: number | "all";
  /** Seconds between blocks on development networks; 0 mines a block per transaction. */
  readonly mineInterval: number;
  readonly rpc: RPCOptions;
  /** Where each setting came from, for the start-up log. */
  readonly sources: Readonly<Record<string, "flag" | "env" | "file">>;
}

export type Command =
  | { readonly kind: "run"; readonly config: NodeConfig }
  | { readonly kind: "help" }
  | { readonly kind: "version" };

export interface Environment {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether log output goes to a terminal (decides the default log format). */
  readonly isTTY: boolean;
  readonly cwd?: string;
  readonly home?: string;
}

type Values = Map<string, unknown>;

/** Blocks whose state a node keeps, unless it is told otherwise (regtest keeps all). */
export const DEFAULT_STATE_WINDOW = 128;

const byFlag = new Map<string, OptionDef>(OPTIONS.map((o) => [o.flag, o]));
const byAlias = new Map<string, { option: OptionDef; value: string }>(
  OPTIONS.flatMap((o) =>
    Object.entries(o.aliases ?? {}).map(([flag, value]) => [flag, { option: o, value }]),
  ),
);
const byKey = new Map<string, OptionDef>(OPTIONS.map((o) => [o.key, o]));

/**
 * Reads the command line, `NODEX_*` variables and the config file into one config.
 * Precedence: flag > environment > config file > network preset > default.
 */
export function parseCommandLine(environment: Environment): Command {
  const fromFlags = parseArgv(environment.argv);
  if (fromFlags === "help" || fromFlags === "version") return { kind: fromFlags };
  const fromEnv = parseEnv(environment.env);
  const configPath = (fromFlags.get("config") ?? fromEnv.get("config")) as string | undefined;
  const fromFile =
    configPath === undefined ? new Map() : parseFile(resolve(environment.cwd ?? ".", configPath));

  const sources: Record<string, "flag" | "env" | "file"> = {};
  const pick = <T>(key: string): T | undefined => {
    for (const [source, values] of [
      ["flag", fromFlags],
      ["env", fromEnv],
      ["file", fromFile],
    ] as const) {
      if (values.has(key)) {
        sources[key] = source;
        return values.get(key) as T;
      }
    }
    return undefined;
  };

  const network = NETWORKS[pick<NetworkName>("network") ?? "mainnet"];
  const dev = network.devAccounts;
  const home = environment.home ?? homedir();
  const datadirText = pick<string>("datadir");
  const datadir =
    datadirText === undefined
      ? join(home, ".nodex", network.name)
      : expandHome(datadirText, home, environment.cwd ?? ".");

  const rpc: RPCOptions = {
    host: pick<string>("rpcHost") ?? defaultRPCOptions.host,
    port: pick<number>("rpcPort") ?? defaultRPCOptions.port,
    modules: unique(pick<ModuleName[]>("rpcModules") ?? network.defaultModules),
    apiKeys: unique(pick<string[]>("apiKeys") ?? []),
    corsOrigins: unique(pick<string[]>("rpcCorsOrigins") ?? (dev ? ["*"] : [])),
    maxBodyBytes: pick<number>("rpcMaxBodyBytes") ?? defaultRPCOptions.maxBodyBytes,
    maxBatchSize: pick<number>("rpcMaxBatchSize") ?? defaultRPCOptions.maxBatchSize,
    maxResponseBytes: pick<number>("rpcMaxResponseBytes") ?? defaultRPCOptions.maxResponseBytes,
    timeoutMs: pick<number>("rpcTimeoutMs") ?? defaultRPCOptions.timeoutMs,
    httpLayer: pick<HttpLayer>("rpcHttpLayer") ?? defaultRPCOptions.httpLayer,
  };
  const config: NodeConfig = {
    network,
    datadir,
    logLevel: pick<LogLevel>("logLevel") ?? "info",
    logFormat: pick<LogFormat>("logFormat") ?? (environment.isTTY ? "pretty" : "json"),
    coinbase: pick<string>("coinbase"),
    stateWindow:
      pick<number | "all">("stateWindow") ??
      (network.name === "regtest" ? "all" : DEFAULT_STATE_WINDOW),
    mineInterval: pick<number>("mineInterval") ?? 0,
    rpc: Object.freeze(rpc),
    sources: Object.freeze(sources),
  };
  if (config.mineInterval > 0 && !dev) {
    throw new UsageError(
      `--mine-interval works on regtest and devnet only: blocks of ${network.name} are made by merged mining`,
    );
  }
  return { kind: "run", config: Object.freeze(config) };
}

function parseArgv(argv: readonly string[]): Values | "help" | "version" {
  if (argv.includes("--help") || argv.includes("-h")) return "help";
  if (argv.includes("--version")) return "version";
  const values: Values = new Map();
  const networkFlag: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("--") && eq !== -1 ? arg.slice(0, eq) : arg;
    const alias = byAlias.get(flag);
    if (alias !== undefined) {
      if (eq !== -1) throw new UsageError(`option ${flag} takes no value`);
      if (alias.option.key === "network") networkFlag.push(flag);
      setValue(values, alias.option, alias.value, flag);
      continue;
    }
    const option = byFlag.get(flag);
    if (option === undefined) {
      throw new UsageError(
        arg.startsWith("-")
          ? `unknown option ${flag}`
          : `unexpected argument ${JSON.stringify(arg)}`,
      );
    }
    let text: string | undefined;
    if (eq !== -1) text = arg.slice(eq + 1);
    else {
      text = argv[i + 1];
      if (text === undefined || (text.startsWith("--") && text.length > 2)) {
        throw new UsageError(`option ${flag} needs a value (${option.valueName ?? "VALUE"})`);
      }
      i++;
    }
    if (option.key === "network") networkFlag.push(`${flag} ${text}`);
    setValue(values, option, text, flag);
  }
  const chosen = new Set(networkFlag.map((f) => byAlias.get(f)?.value ?? f.split(" ")[1]));
  if (chosen.size > 1) {
    throw new UsageError(`conflicting network options: ${networkFlag.join(" and ")}`);
  }
  return values;
}

function setValue(values: Values, option: OptionDef, text: string, where: string): void {
  if (option.list) {
    const previous = (values.get(option.key) as unknown[] | undefined) ?? [];
    values.set(option.key, [...previous, ...parseList(option, text, where)]);
  } else {
    values.set(option.key, parseOne(option, text, where));
  }
}

function parseOne(option: OptionDef, text: string, where: string): unknown {
  try {
    return option.parse(text);
  } catch (err) {
    throw new UsageError(`invalid value for ${where}: ${(err as Error).message}`);
  }
}

function parseList(option: OptionDef, text: string, where: string): unknown[] {
  const items = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return items.map((item) => parseOne(option, item, where));
}

function parseEnv(env: Readonly<Record<string, string | undefined>>): Values {
  const values: Values = new Map();
  for (const option of OPTIONS) {
    const text = env[option.env];
    if (text === undefined || text === "") continue;
    if (option.list) values.set(option.key, parseList(option, text, option.env));
    else values.set(option.key, parseOne(option, text, option.env));
  }
  return values;
}

function parseFile(path: string): Values {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    const why =
      (err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (err as Error).message;
    throw new UsageError(`cannot read config file ${path}: ${why}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UsageError(`config file ${path} must hold a JSON object`);
  }
  const values: Values = new Map();
  for (const [key, value] of Object.entries(raw)) {
    const option = byKey.get(key);
    const where = `${key} in ${path}`;
    if (option === undefined || key === "config") throw new UsageError(`unknown setting ${where}`);
    if (option.list && Array.isArray(value)) {
      values.set(
        key,
        value.map((item) => parseOne(option, scalarText(item, where), where)),
      );
    } else if (option.list) {
      values.set(key, parseList(option, scalarText(value, where), where));
    } else {
      values.set(key, parseOne(option, scalarText(value, where), where));
    }
  }
  return values;
}

function scalarText(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  throw new UsageError(`invalid value for ${where}: expected a string or a number`);
}

function expandHome(path: string, home: string, cwd: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(cwd, path);
}

function unique<T>(items: readonly T[]): readonly T[] {
  return Object.freeze([...new Set(items)]);
}

/** `--help`: generated from the option table. */
export function helpText(): string {
  const lines = [
    "Usage: nodex [options]",
    "",
    "Runs a Nodex full node. With no network option it joins mainnet.",
    "Every option can also be set by its environment variable or in the --config file;",
    "precedence: flag > environment > config file > network preset > default.",
    "",
    "Options:",
  ];
  for (const o of OPTIONS) {
    const head = `  ${o.flag}${o.valueName ? ` ${o.valueName}` : ""}`;
    lines.push(head);
    lines.push(`      ${o.description}`);
    lines.push(
      `      default: ${o.defaultText}; env: ${o.env}; config key: ${o.key}${o.list ? " (list)" : ""}`,
    );
  }
  for (const [flag, text] of Object.entries(COMMAND_FLAGS)) {
    lines.push(`  ${flag}`);
    lines.push(`      ${text}`);
  }
  return `${lines.join("\n")}\n`;
}
