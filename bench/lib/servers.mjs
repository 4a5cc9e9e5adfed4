// The servers the benches start: the peers (Ganache, Hardhat's node, Anvil) and Nodex, each as
// `{id, label, kind, readyTimeoutMs, prepare(port, tmp) -> {cmd, args, cwd, env, version}}`,
// and `launchServer`, which starts one on 127.0.0.1 and checks that it listens only there.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { indent, log, readTail } from "./format.mjs";
import { waitReady } from "./http.mjs";
import { isLoopback, listeningAddresses, startChild } from "./proc.mjs";
import {
  benchDir,
  gitCommit,
  NODEX_MAIN,
  nodexBuild,
  packageJSON,
  resolveOrSkip,
  root,
  Skip,
} from "./setup.mjs";

/** The mnemonic whose first accounts Hardhat and Anvil fund by default (and Nodex on regtest). */
export const DEV_MNEMONIC = "test test test test test test test test test test test junk";

/** Ganache 7 (`ganache@7`); `extraArgs` go after host, port and --logging.quiet. */
export function ganachePeer(extraArgs = []) {
  return {
    id: "ganache",
    label: "Ganache",
    kind: "peer",
    readyTimeoutMs: 60_000,
    prepare(port) {
      const { path, version } = resolveOrSkip("ganache", "dist/node/cli.js");
      return {
        cmd: process.execPath,
        args: [
          path,
          "--server.host",
          "127.0.0.1",
          "--server.port",
          String(port),
          "--logging.quiet",
          ...extraArgs,
        ],
        cwd: benchDir,
        version,
      };
    },
  };
}

/** Hardhat 2's `hardhat node`, project in bench/rpc/hardhat (chain id 31337, default accounts). */
export function hardhatPeer() {
  return {
    id: "hardhat",
    label: "Hardhat node",
    kind: "peer",
    readyTimeoutMs: 90_000,
    prepare(port) {
      const { path, version } = resolveOrSkip("hardhat", "internal/cli/cli.js");
      return {
        cmd: process.execPath,
        args: [path, "node", "--hostname", "127.0.0.1", "--port", String(port)],
        // The folder holding hardhat.config.cjs is the Hardhat project root.
        cwd: join(benchDir, "rpc", "hardhat"),
        env: { HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1" },
        version,
      };
    },
  };
}

/** Anvil, the binary from @foundry-rs/anvil's platform package, `--silent`. */
export function anvilPeer() {
  return {
    id: "anvil",
    label: "Anvil",
    kind: "peer",
    readyTimeoutMs: 30_000,
    prepare(port, tmp) {
      const arch = { x64: "amd64", arm64: "arm64" }[process.arch];
      const platformPkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
      const { version } = resolveOrSkip("@foundry-rs/anvil");
      // Run the binary itself, not the bin.mjs wrapper, so that the PID we measure is Anvil's.
      let path;
      try {
        path = join(
          packageJSON(platformPkg).dir,
          "bin",
          process.platform === "win32" ? "anvil.exe" : "anvil",
        );
      } catch {
        throw new Skip(`${platformPkg} (the package shipping the anvil binary) is not installed`);
      }
      if (!existsSync(path)) throw new Skip(`no anvil binary at ${path}`);
      // Anvil keeps old blocks' states on disk under ~/.foundry/anvil/tmp and leaves them there
      // when it is stopped: gigabytes per bench run. It gets a home of its own in the bench's
      // temp folder, which goes when the run ends.
      const home = join(tmp, "anvil-home");
      mkdirSync(home, { recursive: true });
      return {
        cmd: path,
        args: ["--host", "127.0.0.1", "--port", String(port), "--silent"],
        cwd: benchDir,
        env: { HOME: home },
        version,
      };
    },
  };
}

/**
 * Nodex on regtest with a fresh datadir under `tmp`, run as `node <entry> ...` from `home` (the
 * checkout whose build runs: this repo unless another worktree is named). `entry` defaults to
 * <home>/apps/node/dist/main.js; `nodeArgs` go before it (e.g. --cpu-prof).
 */
export function nodexServer({
  id = "nodex",
  label = "Nodex",
  extraArgs = [],
  entry,
  home = root,
  nodeArgs = [],
} = {}) {
  return {
    id,
    label,
    kind: "nodex",
    readyTimeoutMs: 60_000,
    prepare(port, tmp) {
      // `home`: the checkout whose build runs (another worktree with --nodex-bin).
      const main = home === root ? NODEX_MAIN : join(home, "apps/node/dist/main.js");
      if (!existsSync(main)) {
        throw new Skip(
          home === root
            ? (nodexBuild.error ?? "apps/node/dist/main.js is missing")
            : `${main} is missing (build that checkout first)`,
        );
      }
      const datadir = join(tmp, `${id}-datadir`);
      mkdirSync(datadir, { recursive: true });
      let version = "?";
      try {
        version = JSON.parse(readFileSync(join(home, "apps/node/package.json"), "utf8")).version;
      } catch {}
      const commit = gitCommit(home);
      return {
        cmd: process.execPath,
        args: [
          ...nodeArgs,
          entry ?? main,
          "--regtest",
          "--datadir",
          datadir,
          "--rpc-host",
          "127.0.0.1",
          "--rpc-port",
          String(port),
          "--log-level",
          "warn",
          ...extraArgs,
        ],
        cwd: home,
        version: commit ? `${version} (${commit})` : version,
      };
    },
  };
}

/**
 * Prepares and starts `server` on `port` (output to `logFile`), waits until it answers
 * eth_chainId, and checks that every TCP socket it listens on is loopback. Fills `run`
 * (version, command, startupMs, listening; `skipped` with the reason when it cannot run) and
 * logs one line. Returns the child's handle (stop it with stopChild), or undefined.
 */
export async function launchServer(server, run, { port, tmp, logFile }) {
  let spec;
  try {
    spec = server.prepare(port, tmp);
  } catch (err) {
    run.version = server.version ?? null;
    run.skipped = err instanceof Skip ? err.message : `cannot prepare: ${err.message}`;
    if (server.kind === "nodex" && nodexBuild.output) run.buildOutput = nodexBuild.output;
    if (server.loadInfo) run.load = server.loadInfo;
    log(`  skipped: ${run.skipped}`);
    return undefined;
  }
  run.version = spec.version ?? server.version ?? null;
  if (server.loadInfo) run.load = server.loadInfo;
  run.command = [
    spec.cmd === process.execPath
      ? "node"
      : spec.cmd.startsWith(root)
        ? relative(root, spec.cmd)
        : spec.cmd,
    ...spec.args.map((a) => (a.startsWith(root) ? relative(root, a) : a)),
  ].join(" ");
  const t0 = Date.now();
  const handle = startChild(spec, logFile);
  try {
    await waitReady(port, handle, server.readyTimeoutMs, undefined, server.path ?? "/");
  } catch (err) {
    const tail = readTail(logFile, 12);
    run.skipped = `did not start: ${err.message}${tail ? `\n${indent(tail, "      | ")}` : ""}`;
    log(`  ${run.skipped}`);
    return handle;
  }
  run.startupMs = Date.now() - t0;
  const listening = listeningAddresses(handle.pid);
  if (listening !== undefined) {
    run.listening = listening.map((l) => `${l.address}:${l.port}`);
    const outside = listening.filter((l) => !isLoopback(l.address));
    if (outside.length > 0) {
      run.skipped = `listens beyond loopback (${outside.map((l) => `${l.address}:${l.port}`).join(", ")}): stopped, not measured`;
      log(`  ${run.skipped}`);
      return handle;
    }
  }
  log(
    `  ready in ${(run.startupMs / 1000).toFixed(1)} s on 127.0.0.1:${port} (pid ${handle.pid})${run.version ? `, version ${run.version}` : ""}`,
  );
  return handle;
}
