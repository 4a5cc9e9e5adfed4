import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The built `nodex` of this checkout: the tools talk to it as they would to any node. */
export const NODEX_BIN = fileURLToPath(
  new URL("../../../../apps/node/bin/nodex.js", import.meta.url),
);

/** Hardhat's default coinbase: fees go there, not to a signer whose balance tests measure. */
export const COINBASE = "0xc014ba5ec014ba5ec014ba5ec014ba5ec014ba5e";

/** The first development account of the mnemonic "test test … junk" and its key. */
export const DEV_ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
export const DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
export const DEV_ACCOUNT_2 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/** Regtest's modules and debug (`debug_traceCall` and the like, which Hardhat and Anvil serve). */
export const MODULES_WITH_DEBUG =
  "eth,net,web3,rpc,txpool,nodex,evm,personal,mnr,hardhat,anvil,debug";

export interface Nodex {
  readonly url: string;
  readonly wsUrl: string;
  readonly process: ChildProcess;
  logs(): string;
  /** SIGTERM to this node's PID, wait for its exit, remove its datadir. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** `--client-version`: what `web3_clientVersion` answers (`HardhatNetwork/nodex`, `anvil/nodex`). */
  readonly clientVersion?: string;
  readonly args?: readonly string[];
  /** The network flag: `--regtest` unless told (`--devnet`). */
  readonly network?: string;
}

/** Starts `nodex --regtest` on a free port of 127.0.0.1 with a temporary datadir. */
export async function startNodex(opts: StartOptions = {}): Promise<Nodex> {
  const datadir = mkdtempSync(join(tmpdir(), "nodex-clients-"));
  const args = [
    NODEX_BIN,
    opts.network ?? "--regtest",
    "--no-p2p",
    "--datadir",
    datadir,
    "--rpc-host",
    "127.0.0.1",
    "--rpc-port",
    "0",
    "--log-format",
    "json",
    "--coinbase",
    COINBASE,
    ...(opts.clientVersion !== undefined ? ["--client-version", opts.clientVersion] : []),
    ...(opts.args ?? []),
  ];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("NODEX_")) env[k] = v;
  }
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "ignore", "pipe"] });
  let logs = "";
  child.stderr.setEncoding("utf8");
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`nodex did not start:\n${logs}`));
    }, 30_000);
    child.stderr.on("data", (d: string) => {
      logs += d;
      const line = logs.split("\n").find((l) => l.includes('"msg":"JSON-RPC server listening"'));
      if (line?.endsWith("}")) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      rmSync(datadir, { recursive: true, force: true });
      reject(new Error(`nodex exited with ${code} before listening:\n${logs}`));
    });
  });
  let stopping: Promise<void> | undefined;
  return {
    url,
    wsUrl: url.replace(/^http/, "ws"),
    process: child,
    logs: () => logs,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
        rmSync(datadir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
