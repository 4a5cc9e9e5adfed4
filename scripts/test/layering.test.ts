import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkLayering, importsOf } from "../layering.mjs";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const manifest = (name: string, deps: string[] = []) =>
  JSON.stringify({
    name: `@nodex/${name}`,
    dependencies: Object.fromEntries(deps.map((d) => [`@nodex/${d}`, "0.1.0"])),
  });

/** A workspace with `types`, `state` (depends on types) and `rpc` (types, state), plus `files`. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "nodex-layering-"));
  roots.push(root);
  const all: Record<string, string> = {
    "packages/types/package.json": manifest("types"),
    "packages/types/src/index.ts": "export const one = 1;\n",
    "packages/state/package.json": manifest("state", ["types"]),
    "packages/state/src/index.ts":
      'import { one } from "@nodex/types";\nexport const two = one + 1;\n',
    "packages/rpc/package.json": manifest("rpc", ["types", "state"]),
    "packages/rpc/src/index.ts": 'export * from "./server.js";\n',
    "packages/rpc/src/server.ts":
      'import { two } from "@nodex/state";\nexport const three = two + 1;\n',
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const rules = (root: string) => checkLayering(root).map((v) => v.rule);

describe("checkLayering", () => {
  it("passes a tree that follows the layers", () => {
    expect(checkLayering(tree({}))).toEqual([]);
  });

  it("reports an import cycle with its chain of files", () => {
    const root = tree({
      "packages/rpc/src/a.ts": 'import { b } from "./b.js";\nexport const a = () => b;\n',
      "packages/rpc/src/b.ts": 'import { c } from "./c";\nexport const b = 1;\n',
      "packages/rpc/src/c.ts": 'import { a } from "./a.js";\nexport const c = a;\n',
    });
    const found = checkLayering(root);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ rule: "cycle", file: "packages/rpc/src/a.ts", line: 1 });
    expect(found[0]!.message).toBe(
      "import cycle: packages/rpc/src/a.ts:1 -> packages/rpc/src/b.ts:1 -> packages/rpc/src/c.ts:1 -> packages/rpc/src/a.ts",
    );
  });

  it("counts type-only imports, export-from and index files in cycles", () => {
    const root = tree({
      "packages/rpc/src/a.ts": 'import type { B } from "./b/index.js";\nexport type A = B;\n',
      "packages/rpc/src/b/index.ts": 'export { type A as B } from "../a.js";\n',
    });
    expect(rules(root)).toEqual(["cycle"]);
  });

  it("reports a deep import of another package", () => {
    const root = tree({
      "packages/rpc/src/deep.ts":
        'import { two } from "@nodex/state/src/index.js";\nexport { two };\n',
    });
    const found = checkLayering(root);
    expect(found.map((v) => v.rule)).toEqual(["deep"]);
    expect(found[0]).toMatchObject({ file: "packages/rpc/src/deep.ts", line: 1 });
    expect(found[0]!.message).toContain("@nodex/state/src/index.js");
  });

  it("reports a relative path into another package", () => {
    const root = tree({
      "packages/rpc/src/sneaky.ts": 'export { two } from "../../state/src/index.js";\n',
    });
    expect(rules(root)).toEqual(["outside"]);
  });

  it("reports an import against the layer order", () => {
    const root = tree({
      "packages/state/package.json": manifest("state", ["types", "rpc"]),
      "packages/state/src/up.ts":
        'import type { three } from "@nodex/rpc";\nexport type T = typeof three;\n',
    });
    const found = checkLayering(root);
    expect(found.map((v) => v.rule)).toEqual(["direction"]);
    expect(found[0]!.message).toMatch(/^state -> rpc: state may import only types /);
  });

  it("reports a dynamic import against the layer order", () => {
    const root = tree({
      "packages/types/package.json": manifest("types", ["state"]),
      "packages/types/src/lazy.ts": 'export const load = () => import("@nodex/state");\n',
    });
    expect(rules(root)).toEqual(["direction"]);
  });

  it("reports a package imported without being declared in dependencies", () => {
    const root = tree({
      "packages/state/package.json": manifest("state", []),
    });
    const found = checkLayering(root);
    expect(found.map((v) => v.rule)).toEqual(["undeclared"]);
    expect(found[0]!.message).toContain("packages/state/package.json");
  });

  it("reports a package outside the layer order", () => {
    const root = tree({
      "packages/extra/package.json": manifest("extra", ["types"]),
      "packages/extra/src/index.ts": 'export { one } from "@nodex/types";\n',
    });
    expect(rules(root)).toEqual(["direction"]);
  });

  it("checks apps too: the node app may import any package", () => {
    const root = tree({
      "apps/node/package.json": manifest("node", ["rpc"]),
      "apps/node/src/main.ts": 'import { three } from "@nodex/rpc";\nexport { three };\n',
      "packages/rpc/src/back.ts": 'import "@nodex/node";\n',
    });
    const found = checkLayering(root);
    expect(found.map((v) => [v.file, v.rule])).toEqual([
      ["packages/rpc/src/back.ts", "direction"],
      ["packages/rpc/src/back.ts", "undeclared"],
    ]);
  });
});

describe("importsOf", () => {
  it("finds imports, export-from, type imports and dynamic imports, not strings", () => {
    const text = [
      'import a from "a";',
      'import type { B } from "b";',
      'export * from "c";',
      'export { d } from "d";',
      'const e = await import("e");',
      'type F = import("f").F;',
      'const g = "import(\\"g\\")";',
      "// import h from 'h';",
    ].join("\n");
    expect(importsOf("x.ts", text)).toEqual([
      { specifier: "a", line: 1, typeOnly: false },
      { specifier: "b", line: 2, typeOnly: true },
      { specifier: "c", line: 3, typeOnly: false },
      { specifier: "d", line: 4, typeOnly: false },
      { specifier: "e", line: 5, typeOnly: false },
      { specifier: "f", line: 6, typeOnly: true },
    ]);
  });
});
