#!/usr/bin/env node
// Compares two V8 heap snapshots (.heapsnapshot, as `node --heapsnapshot-signal` or
// `v8.writeHeapSnapshot` write them, e.g. bench/soak's --heap-snapshots): the objects of each
// constructor (or type) by count and by their own size, and what grew between the two, largest
// growth first; with --owners, by the cache or map that holds them instead. One snapshot alone:
// its largest groups.
//
//   node bench/soak/heapDiff.mjs <before.heapsnapshot> <after.heapsnapshot> [--top N] [--owners]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { table } from "../lib/format.mjs";

const { values, positionals } = parseArgs({
  options: { top: { type: "string", default: "30" }, owners: { type: "boolean", default: false } },
  allowPositionals: true,
});
if (positionals.length < 1 || positionals.length > 2) {
  process.stderr.write(
    "usage: node bench/soak/heapDiff.mjs <before.heapsnapshot> [<after.heapsnapshot>] [--top N] [--owners]\n",
  );
  process.exit(2);
}
const top = Number(values.top);

/** The snapshot in `file`, parsed; exits with a message when it is not a whole snapshot. */
function load(file) {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    process.stderr.write(`${file}: not a whole heap snapshot (${err.message})\n`);
    process.exit(1);
  }
}

/** Map of "type name" → {count, size} over the snapshot's nodes. */
function groups(file) {
  const snapshot = load(file);
  const meta = snapshot.snapshot.meta;
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const stride = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const { nodes, strings } = snapshot;
  const out = new Map();
  let total = 0;
  for (let i = 0; i < nodes.length; i += stride) {
    const type = types[nodes[i + typeAt]];
    // Strings and numbers by type alone; objects, closures, arrays and native objects by name.
    const name = [
      "string",
      "concatenated string",
      "sliced string",
      "number",
      "heap number",
    ].includes(type)
      ? ""
      : strings[nodes[i + nameAt]].slice(0, 60);
    const key = `${type} ${name}`.trim();
    const size = nodes[i + sizeAt];
    total += size;
    const g = out.get(key);
    if (g) {
      g.count++;
      g.size += size;
    } else out.set(key, { count: 1, size });
  }
  return { groups: out, total, nodes: nodes.length / stride };
}

/**
 * Map of holder → {count, size}: each object is walked up its first retainers (skipping V8's
 * own objects), at most `maxDepth` steps, to the first LRUCache, Map, Set, WeakMap or
 * OrderedMap, named by what holds that container and the field (`NodeCache.#entries
 * (LRUCache)`; `system / Context.senders (Map)` is a module-level \`const senders\`). A
 * heuristic: an object held in two places counts under the first found.
 */
function owners(file, maxDepth = 10) {
  const s = load(file);
  const m = s.snapshot.meta;
  const nf = m.node_fields;
  const ef = m.edge_fields;
  const ntypes = m.node_types[0];
  const etypes = m.edge_types[0];
  const NS = nf.length;
  const ES = ef.length;
  const { nodes, edges, strings } = s;
  const N = nodes.length / NS;
  const nType = nf.indexOf("type");
  const nName = nf.indexOf("name");
  const nSize = nf.indexOf("self_size");
  const nEdges = nf.indexOf("edge_count");
  const eType = ef.indexOf("type");
  const eName = ef.indexOf("name_or_index");
  const eTo = ef.indexOf("to_node");
  // Reverse edges: for each node, its retainers (first few).
  const retainerCount = new Uint32Array(N);
  let e = 0;
  const firstEdge = new Uint32Array(N + 1);
  for (let i = 0; i < N; i++) {
    firstEdge[i] = e;
    e += nodes[i * NS + nEdges] * ES;
  }
  firstEdge[N] = e;
  const E = edges.length / ES;
  for (let k = 0; k < E; k++) {
    const t = etypes[edges[k * ES + eType]];
    if (t === "weak" || t === "shortcut") continue;
    retainerCount[edges[k * ES + eTo] / NS]++;
  }
  const start = new Uint32Array(N + 1);
  for (let i = 0; i < N; i++) start[i + 1] = start[i] + retainerCount[i];
  const fill = start.slice(0, N);
  const retFrom = new Uint32Array(start[N]);
  const retEdge = new Uint32Array(start[N]);
  for (let i = 0; i < N; i++) {
    for (let k = firstEdge[i]; k < firstEdge[i + 1]; k += ES) {
      const t = etypes[edges[k + eType]];
      if (t === "weak" || t === "shortcut") continue;
      const to = edges[k + eTo] / NS;
      retFrom[fill[to]] = i;
      retEdge[fill[to]] = k;
      fill[to]++;
    }
  }
  const name = (i) => strings[nodes[i * NS + nName]];
  const type = (i) => ntypes[nodes[i * NS + nType]];
  const edgeName = (k) => {
    const t = etypes[edges[k + eType]];
    return t === "element" || t === "hidden" ? `[${edges[k + eName]}]` : strings[edges[k + eName]];
  };
  const CONTAINERS = new Set(["LRUCache", "Map", "Set", "WeakMap", "OrderedMap"]);
  const label = new Map();
  const out = new Map();
  for (let i = 0; i < N; i++) {
    const ty = type(i);
    if (ty === "code" || ty === "hidden" || ty === "synthetic") continue;
    let cur = i;
    let found;
    for (let d = 0; d < maxDepth && !found; d++) {
      if (start[cur] === start[cur + 1]) break;
      // The first retainer that is not a system object.
      let next = retFrom[start[cur]];
      for (let r = start[cur]; r < start[cur + 1]; r++) {
        const f = retFrom[r];
        if (!name(f).startsWith("system /") && type(f) !== "synthetic") {
          next = f;
          break;
        }
      }
      if (type(next) === "object" && CONTAINERS.has(name(next))) {
        // Its owner: the first retainer of the container, and the field.
        let lab = label.get(next);
        if (lab === undefined) {
          lab = name(next);
          for (let r = start[next]; r < start[next + 1]; r++) {
            const f = retFrom[r];
            if (type(f) === "object" || type(f) === "closure") {
              lab = `${name(f)}.${edgeName(retEdge[r])} (${name(next)})`;
              break;
            }
          }
          label.set(next, lab);
        }
        found = lab;
      }
      cur = next;
    }
    const key = found ?? "(other)";
    const g = out.get(key) ?? { count: 0, size: 0 };
    g.count++;
    g.size += nodes[i * NS + nSize];
    out.set(key, g);
  }
  return out;
}

/** `groups`, or with --owners the objects by holder. */
function read(file) {
  if (!values.owners) return groups(file);
  const out = owners(file);
  let total = 0;
  let count = 0;
  for (const g of out.values()) {
    total += g.size;
    count += g.count;
  }
  return { groups: out, total, nodes: count };
}

const MB = 1024 * 1024;
const fmt = (bytes) => (bytes / MB).toFixed(2);
const signed = (n, f = String) => `${n >= 0 ? "+" : ""}${f(n)}`;

const a = read(positionals[0]);
if (positionals.length === 1) {
  const rows = [...a.groups.entries()]
    .sort((x, y) => y[1].size - x[1].size)
    .slice(0, top)
    .map(([k, g]) => [k, g.count.toLocaleString("en-US"), fmt(g.size)]);
  process.stdout.write(
    `${a.nodes.toLocaleString("en-US")} objects, ${fmt(a.total)} MB\n${table(["group", "count", "MB"], rows, ["l", "r", "r"])}\n`,
  );
} else {
  const b = read(positionals[1]);
  const keys = new Set([...a.groups.keys(), ...b.groups.keys()]);
  const rows = [...keys]
    .map((k) => {
      const x = a.groups.get(k) ?? { count: 0, size: 0 };
      const y = b.groups.get(k) ?? { count: 0, size: 0 };
      return { k, x, y, d: y.size - x.size };
    })
    .sort((p, q) => q.d - p.d)
    .slice(0, top)
    .map(({ k, x, y, d }) => [
      k,
      x.count.toLocaleString("en-US"),
      y.count.toLocaleString("en-US"),
      signed(y.count - x.count, (n) => n.toLocaleString("en-US")),
      fmt(x.size),
      fmt(y.size),
      signed(d, fmt),
    ]);
  process.stdout.write(
    `before: ${a.nodes.toLocaleString("en-US")} objects, ${fmt(a.total)} MB; after: ${b.nodes.toLocaleString("en-US")} objects, ${fmt(b.total)} MB (${signed(b.total - a.total, fmt)} MB)\n` +
      `${table(["group", "count before", "count after", "Δ count", "MB before", "MB after", "Δ MB"], rows, ["l", "r", "r", "r", "r", "r", "r"])}\n`,
  );
}
