// Layering of the workspace, checked from the import and export-from statements of every
// `packages/*/src` and `apps/*/src` TypeScript file (type-only imports included):
//  1. no import cycles between the source files of a package;
//  2. across packages only the bare `@nodex/<name>` entry: no `@nodex/<name>/...` deep path and
//     no relative path that leaves the package;
//  3. a package imports only the packages before it in LAYERS, and only those its package.json
//     declares in `dependencies`.
// `node scripts/layering.mjs [root]` prints each violation and exits 1 if there is any.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** The layers, lowest first: each package may import only those before it. */
export const LAYERS = [
  "types",
  "state",
  "evm",
  "mergemining",
  "chain",
  "txpool",
  "miner",
  "p2p",
  "rpc",
  "node",
];

const SCOPE = "@nodex/";
const SOURCE = /\.(ts|tsx|mts|cts)$/;

/** The workspace packages under `packages/` and `apps/`: name, directory, declared dependencies. */
export function findPackages(root) {
  const found = [];
  for (const group of ["packages", "apps"]) {
    const base = join(root, group);
    if (!existsSync(base)) continue;
    for (const entry of readdirSync(base).sort()) {
      const dir = join(base, entry);
      const manifest = join(dir, "package.json");
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, "utf8"));
      const full = typeof pkg.name === "string" ? pkg.name : entry;
      const name = full.startsWith(SCOPE) ? full.slice(SCOPE.length) : full;
      found.push({ name, dir, dependencies: new Set(Object.keys(pkg.dependencies ?? {})) });
    }
  }
  return found;
}

function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && entry.name !== "dist") out.push(...sourceFiles(path));
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out.sort();
}

/**
 * Every module specifier of a file: import and export-from declarations (type-only too),
 * `import x = require(...)`, dynamic `import(...)` and `require(...)` with a string literal.
 */
export function importsOf(path, text = readFileSync(path, "utf8")) {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false);
  const found = [];
  const add = (literal, typeOnly) => {
    const line = file.getLineAndCharacterOfPosition(literal.getStart(file)).line + 1;
    found.push({ specifier: literal.text, line, typeOnly });
  };
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const typeOnly = ts.isImportDeclaration(node)
        ? node.importClause?.isTypeOnly === true
        : node.isTypeOnly;
      add(node.moduleSpecifier, typeOnly);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === "require")) &&
      node.arguments.length === 1 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0], false);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The source file a relative specifier names (`./x.js` is `./x.ts`), if it exists. */
function resolveRelative(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(c|m)?js$/, "");
  const candidates = [
    base,
    `${stem}.ts`,
    `${stem}.tsx`,
    `${stem}.mts`,
    `${stem}.cts`,
    join(base, "index.ts"),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile() && SOURCE.test(c));
}

const inside = (dir, path) => path === dir || path.startsWith(dir + sep);

/** Checks the tree at `root`; returns the violations, each `{ file, line, rule, message }`. */
export function checkLayering(root) {
  root = resolve(root);
  const rel = (p) => relative(root, p).split(sep).join("/");
  const packages = findPackages(root);
  const rank = new Map(LAYERS.map((name, i) => [name, i]));
  const violations = [];
  for (const pkg of packages) {
    const src = join(pkg.dir, "src");
    const graph = new Map();
    for (const file of sourceFiles(src)) {
      const edges = [];
      graph.set(file, edges);
      for (const { specifier, line } of importsOf(file)) {
        const at = { file: rel(file), line };
        if (specifier.startsWith(".")) {
          const target = resolve(dirname(file), specifier);
          if (!inside(pkg.dir, target)) {
            violations.push({
              ...at,
              rule: "outside",
              message: `imports ${specifier}, a path outside package ${pkg.name}: import another package by its bare @nodex/<name> entry`,
            });
            continue;
          }
          const found = resolveRelative(file, specifier);
          if (found !== undefined && inside(src, found)) edges.push({ to: found, line });
          continue;
        }
        if (!specifier.startsWith(SCOPE)) continue;
        const [name, ...rest] = specifier.slice(SCOPE.length).split("/");
        if (rest.length > 0) {
          violations.push({
            ...at,
            rule: "deep",
            message: `imports ${specifier}, an internal path of package ${name}: only its bare ${SCOPE}${name} entry may be imported`,
          });
        }
        const mine = rank.get(pkg.name);
        const theirs = rank.get(name);
        if (name === pkg.name) {
          violations.push({
            ...at,
            rule: "direction",
            message: `imports its own package ${SCOPE}${name}: use a relative path`,
          });
        } else if (mine === undefined || theirs === undefined) {
          const unknown = mine === undefined ? pkg.name : name;
          violations.push({
            ...at,
            rule: "direction",
            message: `${pkg.name} -> ${name}: package ${unknown} has no place in the layer order (${LAYERS.join(" < ")})`,
          });
        } else if (theirs > mine) {
          violations.push({
            ...at,
            rule: "direction",
            message: `${pkg.name} -> ${name}: ${pkg.name} may import only ${LAYERS.slice(0, mine).join(", ") || "no other package"} (layer order ${LAYERS.join(" < ")})`,
          });
        }
        if (name !== pkg.name && !pkg.dependencies.has(`${SCOPE}${name}`)) {
          violations.push({
            ...at,
            rule: "undeclared",
            message: `imports ${SCOPE}${name}, which ${rel(join(pkg.dir, "package.json"))} does not list in dependencies`,
          });
        }
      }
    }
    for (const cycle of findCycles(graph)) {
      const chain = cycle.map((step) => `${rel(step.from)}:${step.line}`);
      violations.push({
        file: rel(cycle[0].from),
        line: cycle[0].line,
        rule: "cycle",
        message:
          `import cycle: ${[...chain, rel(cycle[0].from)].join(" -> ")}` +
          (cycle.members !== undefined && cycle.members.length > cycle.length
            ? ` (files in cycles with each other: ${cycle.members.map(rel).join(", ")})`
            : ""),
      });
    }
  }
  return violations;
}

/**
 * One cycle for each strongly connected component of more than one file (or a file that
 * imports itself): a list of steps `{ from, line }`, the import at `line` of `from` leading
 * to the next step's file, the last one back to the first.
 */
export function findCycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let next = 0;
  const strongConnect = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        strongConnect(to);
        low.set(v, Math.min(low.get(v), low.get(to)));
      } else if (onStack.has(to)) low.set(v, Math.min(low.get(v), index.get(to)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strongConnect(v);
  const cycles = [];
  for (const component of components) {
    const members = new Set(component);
    const start = [...component].sort()[0];
    const selfLoop = (graph.get(start) ?? []).find((e) => e.to === start);
    if (component.length === 1) {
      if (selfLoop) cycles.push([{ from: start, line: selfLoop.line }]);
      continue;
    }
    // The shortest way back to `start` within the component (breadth-first).
    const via = new Map();
    const queue = [start];
    let back;
    while (queue.length > 0 && back === undefined) {
      const v = queue.shift();
      for (const edge of graph.get(v) ?? []) {
        if (!members.has(edge.to)) continue;
        if (edge.to === start) {
          back = { from: v, line: edge.line };
          break;
        }
        if (!via.has(edge.to)) {
          via.set(edge.to, { from: v, line: edge.line });
          queue.push(edge.to);
        }
      }
    }
    const steps = [back];
    for (let at = back.from; at !== start; at = via.get(at).from) steps.unshift(via.get(at));
    cycles.push(Object.assign(steps, { members: [...component].sort() }));
  }
  return cycles;
}

function main() {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
  const violations = checkLayering(root);
  for (const v of violations) console.error(`${v.file}:${v.line}: [${v.rule}] ${v.message}`);
  if (violations.length > 0) {
    console.error(`layering: ${violations.length} violation(s)`);
    process.exit(1);
  }
  console.log("layering: no violations");
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main();
}
