import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The installed CLI entry: e2e tests run the built `nodex`, as users do. */
export const NODEX_BIN = fileURLToPath(new URL("../../../bin/nodex.js", import.meta.url));

export interface StartOptions {
  /**
   * Arguments after the defaults (`--regtest --datadir <tmp> --rpc-port 0 --log-format json`,
   * and `--no-p2p` unless the arguments name a `--p2p…` option or `--bootnodes`).
   */
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Replace the default network flag; `null` for none. */
  readonly network?: string | null;
  /** Use this datadir and leave it in place on stop (restart tests). */
  readonly datadir?: string;
}

export interface RunningNode {
  readonly url: string;
  readonly port: number;
  readonly datadir: string;
  readonly process: ChildProcess;
  /** Everything the node logged so far (standard error). */
  logs(): string;
  /** What the node printed on standard output. */
  stdout(): string;
  /** SIGTERM, wait for exit, remove the datadir; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the real `nodex` on a free port with a temp datadir; resolves once it listens. */
export async function startNode(opts: StartOptions = {}): Promise<RunningNode> {
  const datadir = opts.datadir ?? mkdtempSync(join(tmpdir(), "nodex-e2e-"));
  const removeDatadir = () => {
    if (opts.datadir === undefined) rmSync(datadir, { recursive: true, force: true });
  };
  const child = spawn(
    process.execPath,
    [
      NODEX_BIN,
      ...(opts.network === null ? [] : [opts.network ?? "--regtest"]),
      "--datadir",
      datadir,
      "--rpc-port",
      "0",
      "--log-format",
      "json",
      // Nodes of tests run alone unless a test puts them on a network (many run at once).
      ...((opts.args ?? []).some((a) => /^--(no-)?p2p|^--bootnodes/.test(a)) ? [] : ["--no-p2p"]),
      ...(opts.args ?? []),
    ],
    { env: { ...cleanEnv(), ...opts.env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let logs = "";
  child.stderr.setEncoding("utf8");
  child.stdout.setEncoding("utf8");
  let stdout = "";
  child.stdout.on("data", (d: string) => {
    stdout += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      removeDatadir();
      reject(new Error(`nodex did not start:\n${logs}`));
    }, 20_000);
    child.stderr.on("data", (d: string) => {
      logs += d;
      const line = logs.split("\n").find((l) => l.includes('"msg":"JSON-RPC server listening"'));
      if (line?.endsWith("}")) {
        clearTimeout(timer);
        resolve((JSON.parse(line!) as { url: string }).url);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`nodex exited with ${code} before listening:\n${logs}`));
    });
  });
  let stopped: Promise<number | null> | undefined;
  return {
    url,
    port: Number(new URL(url).port),
    datadir,
    process: child,
    logs: () => logs,
    stdout: () => stdout,
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        const code = await exited;
        removeDatadir();
        return code;
      })();
      return stopped;
    },
  };
}

/** The environment without NODEX_* settings of whoever runs the tests. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("NODEX_")) env[k] = v;
  }
  return env;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Parsed body, or `undefined` when the body is empty. */
  readonly json: unknown;
}

/** Sends a raw HTTP request; `body` strings are sent as they are. */
export async function send(
  url: string,
  body: unknown,
  init: { method?: string; headers?: Record<string, string>; path?: string } = {},
): Promise<RawResponse> {
  const target = init.path === undefined ? url : new URL(init.path, url).toString();
  const method = init.method ?? "POST";
  const res = await fetch(target, {
    method,
    headers: { "content-type": "application/json", ...init.headers },
    ...(method === "GET" || method === "HEAD" || body === undefined
      ? {}
      : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text === "" ? undefined : JSON.parse(text),
  };
}

/** One JSON-RPC call; returns the parsed response object. */
export async function call(url: string, method: string, params: unknown[] = [], id: unknown = 1) {
  const res = await send(url, { jsonrpc: "2.0", id, method, params });
  return res.json as {
    jsonrpc: string;
    id: unknown;
    result?: unknown;
    error?: { code: number; message: string };
  };
}

/** Runs the CLI to completion (for --help, usage errors); resolves with code and output. */
export function runCli(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [NODEX_BIN, ...args], {
      env: { ...cleanEnv(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}
