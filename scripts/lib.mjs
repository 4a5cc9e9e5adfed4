// Shared by `npm start` and `npm test`: make a fresh clone ready to run.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export function run(cmd, args, opts = {}) {
  const result = spawnSync(cmd, args, {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" },
    ...opts,
  });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function mustRun(what, cmd, args) {
  const status = run(cmd, args);
  if (status !== 0) {
    console.error(`${what} failed (exit ${status})`);
    process.exit(status);
  }
}

/** Installs dependencies when node_modules is missing or older than the lockfile. */
export function ensureInstalled() {
  const marker = join(root, "node_modules", ".package-lock.json");
  const lock = join(root, "package-lock.json");
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  // `npm install` rather than `npm ci`: the lockfile lists the optional platform binaries
  // (biome, turbo) only for the platforms the registry served, and `npm ci` refuses such a
  // lock. `npm install` follows the lock for everything it lists and leaves it unchanged.
  console.error("Installing dependencies (npm install)...");
  mustRun("npm install", "npm", ["install", "--no-audit", "--no-fund"]);
}

/** Builds every package (incremental; turbo caches unchanged packages). */
export function ensureBuilt() {
  mustRun("build", join(root, "node_modules", ".bin", "turbo"), [
    "run",
    "build",
    "--output-logs=errors-only",
  ]);
}
