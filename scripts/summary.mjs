// The closing line of `npm test`, from vitest's JSON report.
import { relative } from "node:path";

/**
 * Counts what passed, failed and was skipped. A test file can fail outside any test (an
 * import or a beforeAll/afterAll that throws): its tests then show as skipped or not at all,
 * so each such file counts as one failure, and the report's failed-suite count backs that up.
 * `failed` is 0 only when nothing failed.
 */
export function summarize(report, root = process.cwd()) {
  const failedTests = report.numFailedTests ?? 0;
  const failedSuites = report.numFailedTestSuites ?? 0;
  const outside = (report.testResults ?? [])
    .filter(
      (file) =>
        file.status === "failed" &&
        !(file.assertionResults ?? []).some((test) => test.status === "failed"),
    )
    .map((file) => ({ file: relative(root, file.name), message: file.message ?? "" }));
  let failed = failedTests + outside.length;
  // A suite marked failed with no failed test and no failed file still failed.
  if (failed === 0 && (failedSuites > 0 || report.success === false)) failed = failedSuites || 1;
  const passed = report.numPassedTests ?? 0;
  const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  const lines = [`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`];
  if (outside.length > 0) {
    lines.push(
      `${outside.length} test file(s) failed outside any test (an import or a hook threw):`,
      ...outside.map(({ file, message }) => `  ${file}${message ? `: ${message}` : ""}`),
    );
  }
  return { passed, failed, skipped, failedTests, failedSuites, outside, text: lines.join("\n") };
}
