import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cliMarkdown } from "../../src/cliDocs.js";

describe("docs/cli.md", () => {
  it("is the one generated from the option table (run `npm run docs:cli -w apps/node`)", () => {
    const committed = readFileSync(new URL("../../../../docs/cli.md", import.meta.url), "utf8");
    expect(committed).toBe(cliMarkdown());
  });
});
