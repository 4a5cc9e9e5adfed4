// Self time per function and per package from a V8 .cpuprofile (`node --cpu-prof`).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fmtInt, log, table } from "./format.mjs";
import { root } from "./setup.mjs";

export function summarizeProfile(file, top = 25) {
  const p = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i + 1] is the time between sample i and the next one.
    const dt = p.timeDeltas[i + 1] ?? 0;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
  }
  const fns = new Map();
  const areas = new Map();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const name = functionName || "(anonymous)";
    if (name === "(idle)") {
      idle += us;
      continue;
    }
    total += us;
    const where = shortURL(url);
    const key = where ? `${name}  ${where}:${lineNumber + 1}` : name;
    fns.set(key, (fns.get(key) ?? 0) + us);
    const area = areaOf(url, name);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: total > 0 ? us / total : 0 }));
  return { busyMs: total / 1000, idleMs: idle / 1000, functions: rank(fns), areas: rank(areas) };
}

function shortURL(url) {
  if (!url) return "";
  const path = url.replace(/^file:\/\//, "");
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) return path.slice(nm + "/node_modules/".length);
  return path.startsWith(root) ? relative(root, path) : path;
}

function areaOf(url, name) {
  if (!url) return name.startsWith("(") ? name : "(native)";
  const path = url.replace(/^file:\/\//, "");
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const parts = path.slice(nm + "/node_modules/".length).split("/");
    return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const m = /\/(packages|apps)\/([^/]+)\//.exec(path);
  if (m) return m[1] === "packages" ? `@nodex/${m[2]}` : `apps/${m[2]}`;
  if (url.startsWith("node:")) return "node: (built-in modules)";
  return shortURL(url);
}

/**
 * Keeps the first `.cpuprofile` that `node --cpu-prof` wrote into `dir` as `dest`, and prints its
 * top functions and packages by self time under `label`. `undefined` (with a line saying so) when
 * none was written.
 */
export function keepProfile(dir, dest, label, top = 25) {
  let files = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  } catch {}
  if (files.length === 0) {
    log(`  ${label}: no CPU profile was written (did it exit cleanly?)`);
    return undefined;
  }
  writeFileSync(dest, readFileSync(join(dir, files[0])));
  const s = summarizeProfile(dest, top);
  log("");
  log(
    `== ${label} CPU profile: ${fmtInt(s.busyMs)} ms busy, ${fmtInt(s.idleMs)} ms idle (${relative(root, dest)}) ==`,
  );
  log("");
  for (const [what, rows] of [
    ["function", s.functions],
    ["package", s.areas],
  ]) {
    log(
      table(
        ["self ms", "share", what],
        rows.map((f) => [fmtInt(f.ms), `${(f.share * 100).toFixed(1)}%`, f.name]),
        ["r", "r", "l"],
      ),
    );
    log("");
  }
  return { file: relative(root, dest), ...s };
}
