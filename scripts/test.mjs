// `npm test`: install, build, lint and run every test (unit and end-to-end).
// Extra arguments go to vitest: `npm test -- packages/rpc`.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root, run } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const lint = run(join(root, "node_modules", ".bin", "biome"), ["check", "."]);
if (lint !== 0) {
  console.error("lint failed: run `npm run format` to fix formatting, then fix what remains");
  process.exit(lint);
}
const report = join(tmpdir(), `nodex-vitest-${process.pid}.json`);
const status = run(join(root, "node_modules", ".bin", "vitest"), [
  "run",
  "--reporter=default",
  "--reporter=json",
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]);
try {
  const summary = JSON.parse(readFileSync(report, "utf8"));
  const skipped = summary.numPendingTests + summary.numTodoTests;
  console.log(
    `\ntests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`,
  );
  rmSync(report, { force: true });
} catch {
  console.error("no test report was written");
}
process.exit(status);
