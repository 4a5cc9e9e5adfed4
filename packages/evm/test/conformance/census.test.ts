import { dirname } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CATEGORIES,
  expected,
  fixtureFiles,
  halfOf,
  loadCases,
  RULES,
  ruleFor,
  SLOW_STATE_TESTS,
  STATE_TEST_FILES,
} from "./stateTests.js";

/**
 * What the state tests hold and what runs of it: the pinned fixtures, every folder known, and
 * the cases each half runs and each rule leaves out, against the numbers written in
 * `stateTests.ts` (`EXPECTED`).
 */
describe("Ethereum state tests: census", () => {
  const cases = loadCases();

  it("reads the pinned fixtures, every folder a known one with the README's count of cases", () => {
    const files = fixtureFiles();
    expect(files.length).toBe(STATE_TEST_FILES);
    const counts: Record<string, number> = {};
    for (const file of files) counts[dirname(file)] = 0;
    for (const c of cases) counts[c.category] = (counts[c.category] ?? 0) + 1;
    expect(counts).toEqual(CATEGORIES);
    expect(cases.length).toBe(20_965);
  });

  it("runs and leaves out the expected numbers of cases, each left out by a named rule", () => {
    const run: Record<string, number> = { 1: 0, 2: 0 };
    const leftOut: Record<string, number> = {};
    for (const rule of RULES) leftOut[rule.name] = 0;
    for (const c of cases) {
      const rule = ruleFor(c);
      if (rule === undefined) run[halfOf(c.category)]! += 1;
      else leftOut[rule.name]! += 1;
    }
    const lines = [
      `Ethereum state tests (Cancun), ${SLOW_STATE_TESTS ? "with" : "without"} the slow folders:`,
      `  run: ${run[1]! + run[2]!} (half 1: ${run[1]}, half 2: ${run[2]}), in each of 3 modes`,
      ...Object.entries(leftOut).map(([name, n]) => `  left out, ${name}: ${n}`),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    expect({ run, leftOut }).toEqual(expected());
  });
});
