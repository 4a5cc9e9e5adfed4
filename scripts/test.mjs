// `npm test`: install, build, lint (biome, then the layering of imports) and run every test
// (unit and end-to-end).
// Extra arguments go to vitest: `npm test -- packages/rpc`.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root, run } from "./lib.mjs";
import { summarize } from "./summary.mjs";

ensureInstalled();
ensureBuilt();
const lint = run(join(root, "node_modules", ".bin", "biome"), ["check", "."]);
if (lint !== 0) {
  console.error("lint failed: run `npm run format` to fix formatting, then fix what remains");
  process.exit(lint);
}
const layering = run(process.execPath, [join(root, "scripts", "layering.mjs")]);
if (layering !== 0) {
  console.error("layering failed: the rules are at the top of scripts/layering.mjs");
  process.exit(layering);
}
const report = join(tmpdir(), `nodex-vitest-${process.pid}.json`);
const status = run(join(root, "node_modules", ".bin", "vitest"), [
  "run",
  "--reporter=default",
  "--reporter=json",
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]);
let failed = 0;
try {
  const summary = summarize(JSON.parse(readFileSync(report, "utf8")), root);
  console.log(`\n${summary.text}`);
  failed = summary.failed;
  rmSync(report, { force: true });
} catch {
  console.error("no test report was written");
  failed = 1;
}
// Non-zero whenever something failed, even where vitest's own exit status would say otherwise.
process.exit(status !== 0 ? status : failed > 0 ? 1 : 0);
