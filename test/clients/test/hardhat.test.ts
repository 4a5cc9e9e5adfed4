// The Hardhat project in ../hardhat, unmodified, against a real `nodex --regtest`: compiled,
// then `hardhat test --network nodex` with mocha's JSON reporter; each mocha test is a case
// here, named as it is in the project. The suite runs while this file is collected (vitest needs
// the names before it runs the cases), once; the cases read its report.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEV_ACCOUNT, DEV_ACCOUNT_2, MODULES_WITH_DEBUG, startNodex } from "./helpers/nodex.js";

const PROJECT = fileURLToPath(new URL("../hardhat/", import.meta.url));
const require = createRequire(import.meta.url);
const HARDHAT_CLI = join(
  dirname(require.resolve("hardhat/package.json")),
  "internal/cli/bootstrap.js",
);
/** The project's tests today; fewer in the report means some never ran. */
const AT_LEAST = 69;

interface MochaTest {
  readonly title: string;
  readonly fullTitle: string;
  readonly file?: string;
  readonly err: { message?: string; stack?: string };
}
interface MochaReport {
  readonly stats: { tests: number; passes: number; failures: number; pending: number };
  readonly tests: MochaTest[];
  readonly failures: MochaTest[];
  readonly pending: MochaTest[];
}

function hardhat(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HARDHAT_CLI, ...args], {
      cwd: PROJECT,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output }));
  });
}

interface SuiteRun {
  readonly report: MochaReport;
  readonly output: string;
  readonly nodeLogs: string;
}

/** Compiles the project once; the runs after it take its artifacts. */
async function compileProject(): Promise<void> {
  const compiled = await hardhat(["compile", "--quiet"], {});
  if (compiled.code !== 0) throw new Error(`hardhat compile failed:\n${compiled.output}`);
}

/** `hardhat test` against a node started with `args` after the defaults. */
async function runSuite(args: readonly string[] = []): Promise<SuiteRun> {
  const node = await startNodex({
    clientVersion: "HardhatNetwork/nodex",
    args: ["--rpc-modules", MODULES_WITH_DEBUG, ...args],
  });
  const dir = mkdtempSync(join(tmpdir(), "nodex-hardhat-report-"));
  const file = join(dir, "mocha.json");
  try {
    const run = await hardhat(["test", "--no-compile", "--network", "nodex"], {
      NODEX_URL: node.url,
      MOCHA_JSON: file,
    });
    if (!existsSync(file)) {
      throw new Error(`hardhat test wrote no report (exit ${run.code}):\n${run.output}`);
    }
    return {
      report: JSON.parse(readFileSync(file, "utf8")) as MochaReport,
      output: run.output,
      nodeLogs: node.logs(),
    };
  } finally {
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The project against a fork of a Nodex devnet that holds a block of its own: its contracts
 * deploy on the upstream's state, from the development accounts funded on top of it.
 */
async function runSuiteOnFork(): Promise<SuiteRun> {
  const upstream = await startNodex({ network: "--devnet" });
  try {
    const send = await fetch(upstream.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_sendTransaction",
        params: [{ from: DEV_ACCOUNT, to: DEV_ACCOUNT_2, value: "0x1" }],
      }),
    });
    const sent = (await send.json()) as { error?: unknown };
    if (sent.error !== undefined) throw new Error(`devnet: ${JSON.stringify(sent.error)}`);
    return await runSuite(["--fork-url", upstream.url, "--fork-block", "1"]);
  } finally {
    await upstream.stop();
  }
}

await compileProject();
const regtest = await runSuite();
const forked = await runSuiteOnFork();

function name(t: MochaTest): string {
  return t.file === undefined ? t.fullTitle : `${basename(t.file)} › ${t.fullTitle}`;
}

/** A vitest case per mocha test of `run`, and per failed hook. */
function casesOf({ report }: SuiteRun): void {
  const ran = new Set(report.tests.map((t) => t.fullTitle));
  // A failed hook (`"before each" hook for …`) is a failure that is not a test.
  for (const hook of report.failures.filter((f) => !ran.has(f.fullTitle))) {
    it(name(hook), () => {
      throw new Error(hook.err.stack ?? hook.err.message ?? "the hook failed");
    });
  }
  // The project skips nothing: a test mocha left pending (`it.skip`, no body) fails here.
  const pending = new Set(report.pending.map((t) => t.fullTitle));
  for (const test of report.tests) {
    it(name(test), () => {
      if (pending.has(test.fullTitle))
        throw new Error("the Hardhat project leaves this test pending: run it or remove it");
      if (test.err.message !== undefined) {
        const error = new Error(test.err.message);
        error.stack = test.err.stack ?? test.err.message;
        throw error;
      }
    });
  }
}

describe("the Hardhat project against nodex --regtest", () => {
  const { report, output, nodeLogs } = regtest;
  it(`ran its ${AT_LEAST} tests or more`, () => {
    expect(report.stats.tests, output).toBeGreaterThanOrEqual(AT_LEAST);
  });

  it("the node printed Vault's console.log lines (hardhat/console.sol) in its log", () => {
    const lines = nodeLogs
      .split("\n")
      .filter((l) => l.includes('"msg":"console.log"') && l.endsWith("}"))
      .map((l) => (JSON.parse(l) as { message?: string }).message);
    expect(lines).toContainEqual(
      expect.stringMatching(/^Vault: withdrawing 1000000000000000000 wei at \d+$/),
    );
  });

  casesOf(regtest);
});

describe("the Hardhat project against nodex --regtest --fork-url <a Nodex devnet>", () => {
  it(`ran its ${AT_LEAST} tests or more on the fork`, () => {
    expect(forked.report.stats.tests, forked.output).toBeGreaterThanOrEqual(AT_LEAST);
    expect(forked.nodeLogs).toContain('"msg":"Forking"');
  });
  casesOf(forked);
});
