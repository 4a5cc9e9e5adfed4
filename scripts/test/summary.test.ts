import { describe, expect, it } from "vitest";
import { summarize } from "../summary.mjs";

const file = (name: string, status: string, tests: string[], message = "") => ({
  name: `/repo/${name}`,
  status,
  message,
  assertionResults: tests.map((s) => ({ status: s })),
});

describe("summarize", () => {
  it("counts passed, failed and skipped tests", () => {
    const s = summarize(
      {
        numPassedTests: 3,
        numFailedTests: 1,
        numPendingTests: 1,
        numTodoTests: 1,
        numFailedTestSuites: 2,
        success: false,
        testResults: [file("a.test.ts", "failed", ["passed", "failed"])],
      },
      "/repo",
    );
    expect(s.text).toBe("tests: 3 passed, 1 failed, 2 skipped");
    expect(s.failed).toBe(1);
  });

  it("counts a file whose setup or import failed, though no test failed", () => {
    const s = summarize(
      {
        numPassedTests: 5,
        numFailedTests: 0,
        numPendingTests: 2,
        numTodoTests: 0,
        numFailedTestSuites: 3,
        success: false,
        testResults: [
          file("ok.test.ts", "passed", ["passed"]),
          file("setup.test.ts", "failed", ["skipped", "skipped", "passed"]),
          file("import.test.ts", "failed", [], "Cannot find module './gone.js'"),
        ],
      },
      "/repo",
    );
    expect(s.failed).toBe(2);
    expect(s.text).toBe(
      [
        "tests: 5 passed, 2 failed, 2 skipped",
        "2 test file(s) failed outside any test (an import or a hook threw):",
        "  setup.test.ts",
        "  import.test.ts: Cannot find module './gone.js'",
      ].join("\n"),
    );
  });

  it("never says 0 failed when the report says a suite failed", () => {
    const s = summarize({
      numPassedTests: 1,
      numFailedTests: 0,
      numPendingTests: 0,
      numTodoTests: 0,
      numFailedTestSuites: 1,
      success: false,
      testResults: [],
    });
    expect(s.failed).toBe(1);
    expect(s.text).toBe("tests: 1 passed, 1 failed, 0 skipped");
  });

  it("says 0 failed when all passed", () => {
    const s = summarize({
      numPassedTests: 2,
      numFailedTests: 0,
      numPendingTests: 0,
      numTodoTests: 0,
      numFailedTestSuites: 0,
      success: true,
      testResults: [file("a.test.ts", "passed", ["passed", "passed"])],
    });
    expect(s.failed).toBe(0);
  });
});
