// Set-up shared by the benches: where things are, bench dependencies (installed on demand into
// bench/node_modules), the Nodex build, versions and the repo commit.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { indent, lastLines, log } from "./format.mjs";

export const benchDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const root = dirname(benchDir);
export const NODEX_MAIN = join(root, "apps/node/dist/main.js");

/** A server (or workload) that cannot run here: reported with the reason, the run goes on. */
export class Skip extends Error {}

/** Why Nodex could not be built, if it could not. */
export const nodexBuild = { error: undefined, output: undefined };

const benchRequire = createRequire(join(benchDir, "package.json"));

export function packageJSON(name) {
  // Look in the node_modules folders directly: some packages have no entry point (anvil) or
  // hide package.json behind their exports map (uWS).
  for (const dir of benchRequire.resolve.paths(name) ?? []) {
    const file = join(dir, name, "package.json");
    if (existsSync(file))
      return { dir: join(dir, name), json: JSON.parse(readFileSync(file, "utf8")) };
  }
  throw new Error(`Cannot find package ${name}`);
}

export function resolveOrSkip(name, file = "") {
  try {
    const { dir, json } = packageJSON(name);
    return { path: join(dir, file), version: json.version };
  } catch (err) {
    throw new Skip(`${name} is not installed in bench/node_modules (${err.message})`);
  }
}

/** `require` from bench/ (CommonJS packages such as solc). */
export function benchRequireOf(name) {
  return benchRequire(name);
}

/**
 * `npm install --prefix bench` when bench/node_modules is missing, or when one of `required`
 * (package names this bench imports) is not in it.
 */
export function ensureBenchDeps(required = []) {
  const modules = join(benchDir, "node_modules");
  const missing = existsSync(modules)
    ? required.filter((name) => !existsSync(join(modules, name, "package.json")))
    : [];
  if (existsSync(modules) && missing.length === 0) return;
  log(
    `${missing.length > 0 ? `${missing.join(", ")} missing from bench/node_modules` : "bench/node_modules is missing"}: npm install --prefix bench --no-audit --no-fund`,
  );
  const r = spawnSync("npm", ["install", "--prefix", benchDir, "--no-audit", "--no-fund"], {
    cwd: root,
    stdio: "inherit",
  });
  if (r.status !== 0) {
    process.stderr.write(`npm install in bench/ failed (exit ${r.status ?? r.signal})\n`);
    process.exit(1);
  }
}

export function ensureNodexBuilt(force) {
  if (existsSync(NODEX_MAIN) && !force) {
    const newer = staleSource();
    if (newer) {
      log(
        `note: ${relative(root, newer.path)} is newer than everything in ${relative(root, newer.dist)}: Nodex may be stale (--build rebuilds it)`,
      );
    }
    return;
  }
  log(`${force ? "--build" : "apps/node/dist/main.js is missing"}: npm run build (repo root)`);
  const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };
  if (build("npm", ["run", "build"], env)) return;
  // `npm run build` is turbo; when turbo itself cannot run, `tsc -b` builds the same project
  // references (the root tsconfig.json lists them).
  log("  trying npx tsc -b (repo root)");
  if (build("npx", ["--no-install", "tsc", "-b"], env)) return;
  nodexBuild.error =
    "the build failed (npm run build, then tsc -b), so apps/node/dist/main.js is missing";
}

function build(cmd, argv, env) {
  const t0 = Date.now();
  const r = spawnSync(cmd, argv, { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, env });
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  if (r.status === 0 && existsSync(NODEX_MAIN)) {
    log(`  built in ${seconds} s`);
    return true;
  }
  const tail = lastLines(
    `${r.stdout ?? ""}\n${r.stderr ?? String(r.error ?? "")}`
      .split("\n")
      .filter((l) => !/^npm warn|telemetry|^Attention:|roadmap|opt-out/i.test(l))
      .join("\n"),
    12,
  );
  nodexBuild.output = `${nodexBuild.output ? `${nodexBuild.output}\n` : ""}$ ${cmd} ${argv.join(" ")}\n${tail}`;
  log(
    `  ${cmd} ${argv.join(" ")} failed (exit ${r.status ?? r.signal}) after ${seconds} s; its output ends with:\n${indent(tail, "      | ")}`,
  );
  return false;
}

/**
 * A source file newer than every file of its package's build (packages/<name>/src against
 * packages/<name>/dist, the same for apps/), or undefined. A build that leaves a file as it was
 * (tsc does not rewrite an unchanged output) still writes the package's .tsbuildinfo.
 */
function staleSource() {
  const newest = (dir) => {
    let found;
    const walk = (d) => {
      let entries = [];
      try {
        entries = readdirSync(d, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) {
          const { mtimeMs } = statSync(p);
          if (!found || mtimeMs > found.mtimeMs) found = { path: p, mtimeMs };
        }
      }
    };
    walk(dir);
    return found;
  };
  for (const top of ["packages", "apps"]) {
    let names = [];
    try {
      names = readdirSync(join(root, top));
    } catch {}
    for (const name of names) {
      const src = newest(join(root, top, name, "src"));
      const dist = newest(join(root, top, name, "dist"));
      if (src && (!dist || src.mtimeMs > dist.mtimeMs))
        return { ...src, dist: join(root, top, name, "dist") };
    }
  }
  return undefined;
}

export function gitCommit(dir = root) {
  const r = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: dir, encoding: "utf8" });
  if (r.status !== 0) return undefined;
  const dirty = spawnSync("git", ["status", "--porcelain", "--", "packages", "apps"], {
    cwd: dir,
    encoding: "utf8",
  });
  return `${r.stdout.trim()}${dirty.stdout?.trim() ? "+dirty" : ""}`;
}

// ---------------------------------------------------------------------------------------------
// Output
