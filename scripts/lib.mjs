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

/**
 * Installs dependencies with `npm ci` when node_modules is missing or older than the lockfile.
 * `npm ci` installs exactly what package-lock.json lists and fails when the lockfile does not
 * match the package.json files, so an incomplete lockfile shows up here and in CI rather than
 * being patched over by `npm install` on one machine.
 */
export function ensureInstalled() {
  const marker = join(root, "node_modules", ".package-lock.json");
  const lock = join(root, "package-lock.json");
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  console.error("Installing dependencies (npm ci)...");
  mustRun("npm ci", "npm", ["ci", "--no-audit", "--no-fund"]);
}

/** Builds every package (incremental; turbo caches unchanged packages). */
export function ensureBuilt() {
  mustRun("build", join(root, "node_modules", ".bin", "turbo"), [
    "run",
    "build",
    "--output-logs=errors-only",
  ]);
}
