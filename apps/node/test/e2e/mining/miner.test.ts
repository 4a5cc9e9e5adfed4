import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeBlock, encodeBlock } from "@nodex/types";
import { afterAll, describe, expect, it } from "vitest";
import { call, cleanEnv, NODEX_BIN, runCli, startNode } from "../helpers/node.js";

// The reference miner on a testnet node with a test difficulty, and its chain moved to a second
// node as a file: the second node checks every proof and ends on the same head and state root.

const TEST_CHAIN = ["--min-difficulty", "1"];

const dirs: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `nodex-${name}-`));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function runMiner(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [NODEX_BIN, "mine", ...args], {
      env: cleanEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.once("close", (code) => resolve({ code, stderr }));
  });
}

async function head(url: string): Promise<{ number: string; hash: string; stateRoot: string }> {
  const res = await call(url, "eth_getBlockByNumber", ["latest", false]);
  return res.result as { number: string; hash: string; stateRoot: string };
}

describe("nodex mine", () => {
  it("mines testnet blocks that another node imports from a file to the same head", async () => {
    const source = tempDir("testnet");
    const node = await startNode({
      network: "--testnet",
      datadir: source,
      args: ["--miner", ...TEST_CHAIN],
    });
    let mined: Awaited<ReturnType<typeof head>>;
    try {
      const run = await runMiner([
        "--rpc",
        node.url,
        "--threads",
        "2",
        "--max-blocks",
        "3",
        "--poll-ms",
        "500",
      ]);
      expect(run.stderr).toMatch(/block 1 0x[0-9a-f]{64}: IMPORTED_BEST/);
      expect(run.code).toBe(0);
      mined = await head(node.url);
      expect(Number(mined.number)).toBeGreaterThanOrEqual(3);
      const block = (await call(node.url, "eth_getBlockByNumber", ["0x1", false])).result as Record<
        string,
        string
      >;
      expect(block.bitcoinMergedMiningHeader).toMatch(/^0x[0-9a-f]{160}$/);
      expect(BigInt(block.difficulty)).toBeGreaterThan(1000n);
    } finally {
      await node.stop();
    }

    const file = join(tempDir("file"), "chain.rlp");
    const exported = await runCli([
      "export",
      file,
      "--testnet",
      "--datadir",
      source,
      ...TEST_CHAIN,
    ]);
    expect(exported.code, exported.stderr).toBe(0);

    // Another node takes the file and checks every proof on the way.
    const copy = tempDir("copy");
    const imported = await runCli(["import", file, "--testnet", "--datadir", copy, ...TEST_CHAIN]);
    expect(imported.code, imported.stderr).toBe(0);
    const second = await startNode({ network: "--testnet", datadir: copy, args: TEST_CHAIN });
    try {
      const got = await head(second.url);
      expect(got).toMatchObject({
        number: mined.number,
        hash: mined.hash,
        stateRoot: mined.stateRoot,
      });
    } finally {
      await second.stop();
    }

    // The same file with one forged proof (block 2's Bitcoin header nonce changed) is refused
    // at that block, and what came before stays.
    const bytes = readFileSync(file);
    const blocks: Uint8Array[] = [];
    for (let offset = 0; offset < bytes.length; ) {
      const block = decodeBlock(bytes.subarray(offset, offset + itemLength(bytes, offset)));
      offset += itemLength(bytes, offset);
      blocks.push(encodeBlock(block));
    }
    const forgedBlock = decodeBlock(blocks[1]!);
    const header = forgedBlock.header.bitcoinMergedMiningHeader.slice();
    header[79] = header[79]! ^ 0x80;
    blocks[1] = encodeBlock({
      ...forgedBlock,
      header: { ...forgedBlock.header, bitcoinMergedMiningHeader: header },
    });
    const forged = join(tempDir("forged"), "chain.rlp");
    writeFileSync(forged, Buffer.concat(blocks));
    const refused = await runCli([
      "import",
      forged,
      "--testnet",
      "--datadir",
      tempDir("refused"),
      ...TEST_CHAIN,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/block 2 0x[0-9a-f]{64}/);
    expect(refused.stderr).toContain("invalid merged-mining proof");
    expect(refused.stderr).toMatch(/imported 1\b/);
  }, 120_000);

  it("refuses bad usage with exit 2", async () => {
    expect((await runMiner(["--rpc", "nowhere"])).code).toBe(2);
    expect((await runMiner(["--max-blocks", "x"])).code).toBe(2);
    expect((await runMiner(["--bogus"])).code).toBe(2);
  });
});

/** The length of the RLP item at `offset` (a list: the block). */
function itemLength(bytes: Uint8Array, offset: number): number {
  const b = bytes[offset]!;
  if (b <= 0xf7) return 1 + (b - 0xc0);
  const n = b - 0xf7;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + bytes[offset + 1 + i]!;
  return 1 + n + len;
}
