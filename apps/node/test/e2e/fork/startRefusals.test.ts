import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok, startUpstreamChain, type UpstreamChain } from "../helpers/forkUpstream.js";
import { runCli, startNode } from "../helpers/node.js";

// What the real binary says when a fork cannot start: each refusal names what was wrong, exits
// non-zero without a stack, and leaves the datadir as it was.
let upstream: UpstreamChain;
const dirs: string[] = [];

beforeAll(async () => {
  upstream = await startUpstreamChain(1);
}, 60_000);

afterAll(async () => {
  await upstream?.node.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-fork-refused-"));
  dirs.push(dir);
  return dir;
}

/** Runs a regtest node on `dir` with these arguments until it exits. */
const run = (dir: string, args: readonly string[]) =>
  runCli(["--regtest", "--datadir", dir, "--rpc-port", "0", "--no-p2p", ...args]);

function refusedAtStart(result: { code: number | null; stderr: string }, message: string) {
  expect(result.code).toBe(1);
  expect(result.stderr).toContain('"msg":"Start-up failed"');
  expect(result.stderr).toContain(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe("a fork that cannot start", () => {
  it("refuses --fork-url on mainnet as a usage error", async () => {
    const result = await runCli([
      "--mainnet",
      "--datadir",
      newDir(),
      "--fork-url",
      upstream.node.url,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "--fork-url works on regtest and devnet only: a node of mainnet follows its own network",
    );
  });

  it("refuses a --fork-block beyond the upstream's head, naming the head", async () => {
    const head = Number(await ok(upstream.node.url, "eth_blockNumber"));
    const dir = newDir();
    const result = await run(dir, [
      "--fork-url",
      upstream.node.url,
      "--fork-block",
      String(head + 1000),
    ]);
    refusedAtStart(result, `the upstream has no block ${head + 1000} (its head is ${head})`);
    expect(existsSync(join(dir, "fork.json"))).toBe(false);
  });

  it("refuses a --fork-block-hash the upstream's block does not have, naming the block and both hashes", async () => {
    const at = `0x${upstream.forkBlock.toString(16)}`;
    const { hash } = (await ok(upstream.node.url, "eth_getBlockByNumber", [at, false])) as {
      hash: string;
    };
    const wrong = `0x${"ab".repeat(32)}`;
    const dir = newDir();
    const result = await run(dir, [
      "--fork-url",
      upstream.node.url,
      "--fork-block",
      String(upstream.forkBlock),
      "--fork-block-hash",
      wrong,
    ]);
    refusedAtStart(
      result,
      `the upstream's block ${upstream.forkBlock} has hash ${hash}, not ${wrong} (--fork-block-hash)`,
    );
    expect(existsSync(join(dir, "fork.json"))).toBe(false);
  });

  it("refuses a datadir holding a fork of another block, or started without --fork-url", async () => {
    const dir = newDir();
    const first = upstream.forkBlock - 1;
    const fork = await startNode({
      datadir: dir,
      args: ["--fork-url", upstream.node.url, "--fork-block", String(first)],
    });
    expect(await fork.stop()).toBe(0);
    const other = await run(dir, [
      "--fork-url",
      upstream.node.url,
      "--fork-block",
      String(upstream.forkBlock),
    ]);
    refusedAtStart(
      other,
      `the datadir ${dir} holds a fork of block ${first}, not of --fork-block ${upstream.forkBlock}: use another --datadir for another fork point`,
    );
    const plain = await run(dir, []);
    refusedAtStart(
      plain,
      `the datadir ${dir} holds a fork of block ${first} of ${upstream.node.url}/ (${join(dir, "fork.json")}): start it with --fork-url`,
    );
  });

  it("refuses to fork a datadir holding a chain of its own, writing no fork point to it", async () => {
    const dir = newDir();
    const plain = await startNode({ datadir: dir });
    expect(await plain.stop()).toBe(0);
    const forked = await run(dir, ["--fork-url", upstream.node.url]);
    refusedAtStart(forked, "the datadir holds a chain that starts at genesis");
    expect(existsSync(join(dir, "fork.json"))).toBe(false);
  });
});
