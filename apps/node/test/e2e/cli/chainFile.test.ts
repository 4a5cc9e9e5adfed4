import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex, decodeBlock, headerHash } from "@nodex/types";
import { JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, cleanEnv, NODEX_BIN, startNode } from "../helpers/node.js";

// nodex export and nodex import with the built CLI: a regtest chain moved to an empty datadir.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const KEY2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const RECIPIENT = "0x000000000000000000000000000000000000bEEF";
/** Runtime: mstore(0, 7); log1(0, 32, keccak("Ping()")); return 0x2a. */
const PING_TOPIC = keccak256(toUtf8Bytes("Ping()"));
const PING_RUNTIME = `0x60076000527f${PING_TOPIC.slice(2)}60206000a1602a60005260206000f3`;

const tmp = mkdtempSync(join(tmpdir(), "nodex-chainfile-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const datadir = (name: string) => join(tmp, name);
const CHAIN = join(tmp, "chain.rlp");

interface Run {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

/** Runs the CLI to completion, with `stdin` as its standard input; standard output as bytes. */
function nodex(args: readonly string[], stdin?: Uint8Array): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [NODEX_BIN, ...args], {
      env: cleanEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.stdin.end(stdin);
    child.once("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

/** The whole length of the RLP list at `at`, prefix included. */
function listLength(bytes: Uint8Array, at: number): number {
  const first = bytes[at]!;
  if (first <= 0xf7) return 1 + first - 0xc0;
  let length = 0;
  for (let i = 0; i < first - 0xf7; i++) length = length * 256 + bytes[at + 1 + i]!;
  return 1 + first - 0xf7 + length;
}

/** Where each block of a chain file starts, from the RLP list prefixes. */
function blockOffsets(bytes: Uint8Array): number[] {
  const offsets: number[] = [];
  for (let at = 0; at < bytes.length; at += listLength(bytes, at)) offsets.push(at);
  return offsets;
}

interface Block {
  readonly hash: string;
  readonly stateRoot: string;
}

/** What the source node answered before it stopped. */
const source = {
  head: undefined as unknown as Block & { number: string },
  blocks: [] as Block[],
  txHashes: [] as string[],
  receipts: [] as unknown[],
  /** Balances of the senders, the recipient, the contract and the coinbase, at the head. */
  balances: new Map<string, unknown>(),
  contract: "",
  exportWhileRunning: undefined as unknown as Run,
};

beforeAll(async () => {
  const node = await startNode({ datadir: datadir("source") });
  const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  try {
    const w0 = new Wallet(KEY0, provider);
    const w2 = new Wallet(KEY2, provider);
    const sent = [await w0.sendTransaction({ to: RECIPIENT, value: 10n ** 18n })];
    sent.push(await w2.sendTransaction({ to: RECIPIENT, value: 3n * 10n ** 17n }));
    sent.push(await w0.sendTransaction({ data: deployCode(PING_RUNTIME) }));
    const deployed = await sent[2]!.wait();
    source.contract = deployed!.contractAddress!;
    sent.push(await w2.sendTransaction({ to: source.contract, data: "0x" }));
    await sent[3]!.wait();
    source.txHashes = sent.map((tx) => tx.hash);
    const coinbase = (await call(node.url, "eth_coinbase")).result as string;
    for (const account of [w0.address, w2.address, RECIPIENT, source.contract, coinbase]) {
      source.balances.set(
        account,
        (await call(node.url, "eth_getBalance", [account, "latest"])).result,
      );
    }
    for (const hash of source.txHashes) {
      source.receipts.push((await call(node.url, "eth_getTransactionReceipt", [hash])).result);
    }
    for (let n = 0; n <= 4; n++) {
      source.blocks.push(
        (await call(node.url, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false]))
          .result as Block,
      );
    }
    source.head = (await call(node.url, "eth_getBlockByNumber", ["latest", false]))
      .result as Block & { number: string };
    source.exportWhileRunning = await nodex([
      "export",
      join(tmp, "busy.rlp"),
      "--regtest",
      "--datadir",
      datadir("source"),
    ]);
  } finally {
    provider.destroy();
    await node.stop();
  }
});

describe("nodex export", () => {
  it("refuses while a node runs on the datadir", () => {
    const run = source.exportWhileRunning;
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `nodex export: the database in ${datadir("source")} is in use by another process (a running node?): stop it before nodex export\n`,
    );
  });

  it("writes blocks 1 to the head as RLP blocks, to a file or to standard output", async () => {
    expect(source.head.number).toBe("0x4");
    const run = await nodex(["export", CHAIN, "--regtest", "--datadir", datadir("source")]);
    expect(run.stderr).toBe(`nodex export: exported 4 blocks, 1 to 4, to ${CHAIN}\n`);
    expect(run.code).toBe(0);
    const bytes = readFileSync(CHAIN);
    expect(blockOffsets(bytes)).toHaveLength(4);
    const piped = await nodex(["export", "-", "--regtest", "--datadir", datadir("source")]);
    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe("nodex export: exported 4 blocks, 1 to 4, to standard output\n");
    expect(piped.stdout.equals(bytes)).toBe(true);
  });

  it("refuses to overwrite a file without --force", async () => {
    const file = join(tmp, "taken.rlp");
    writeFileSync(file, "keep me");
    const args = ["export", file, "--regtest", "--datadir", datadir("source"), "--to", "1"];
    const refused = await nodex(args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`nodex export: ${file} exists: pass --force to overwrite it\n`);
    expect(readFileSync(file, "utf8")).toBe("keep me");
    const forced = await nodex([...args, "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toBe(`nodex export: exported 1 blocks, 1 to 1, to ${file}\n`);
    expect(
      readFileSync(file).equals(
        readFileSync(CHAIN).subarray(0, blockOffsets(readFileSync(CHAIN))[1]),
      ),
    ).toBe(true);
  });
});

describe("nodex import", () => {
  const summary = (imported: number, skipped: number, n: number) =>
    `nodex import: imported ${imported} blocks, skipped ${skipped} already there; head ${n} ${source.blocks[n]!.hash}, state root ${source.blocks[n]!.stateRoot}\n`;

  it("moves the chain into an empty datadir: a node there answers the same head, state and receipts", async () => {
    const run = await nodex(["import", CHAIN, "--regtest", "--datadir", datadir("copy")]);
    expect(run.stderr).toBe(summary(4, 0, 4));
    expect(run.code).toBe(0);
    const node = await startNode({ datadir: datadir("copy") });
    try {
      const head = (await call(node.url, "eth_getBlockByNumber", ["latest", false])).result;
      expect(head).toEqual(source.head);
      for (const [i, hash] of source.txHashes.entries()) {
        expect((await call(node.url, "eth_getTransactionReceipt", [hash])).result).toEqual(
          source.receipts[i],
        );
      }
      const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
      try {
        expect(await provider.getBalance(RECIPIENT)).toBe(13n * 10n ** 17n);
        for (const [account, balance] of source.balances) {
          expect((await call(node.url, "eth_getBalance", [account, "latest"])).result).toBe(
            balance,
          );
        }
        expect(await provider.call({ to: source.contract })).toBe(`0x${"2a".padStart(64, "0")}`);
      } finally {
        provider.destroy();
      }
    } finally {
      await node.stop();
    }
  });

  it("skips blocks already there: a re-import from standard input changes nothing", async () => {
    const run = await nodex(
      ["import", "-", "--regtest", "--datadir", datadir("copy")],
      readFileSync(CHAIN),
    );
    expect(run.stderr).toBe(summary(0, 4, 4));
    expect(run.code).toBe(0);
  });

  it("stops at a corrupted block with its number, hash and reason; the blocks before it stay", async () => {
    const bytes = Buffer.from(readFileSync(CHAIN));
    const root = Buffer.from(source.blocks[3]!.stateRoot.slice(2), "hex");
    const at = bytes.indexOf(root);
    expect(at).toBeGreaterThan(blockOffsets(bytes)[2]!);
    bytes[at + 31]! ^= 0xff;
    const bad = join(tmp, "corrupt.rlp");
    writeFileSync(bad, bytes);
    const run = await nodex(["import", bad, "--regtest", "--datadir", datadir("partial")]);
    expect(run.code).toBe(1);
    const start = blockOffsets(bytes)[2]!;
    const changed = decodeBlock(bytes.subarray(start, start + listLength(bytes, start)));
    const hash = bytesToHex(headerHash(changed.header));
    // the reason is the chain's: the first rule the changed header breaks
    expect(run.stderr).toContain(
      `nodex import: block 3 ${hash} refused (INVALID_BLOCK): block 3 ${hash}: `,
    );
    expect(run.stderr).toContain(summary(2, 0, 2));
    // the good file then brings the rest
    const rest = await nodex(["import", CHAIN, "--regtest", "--datadir", datadir("partial")]);
    expect(rest.stderr).toBe(summary(2, 2, 4));
  });

  it("stops at a block whose parent it lacks", async () => {
    const part = join(tmp, "part.rlp");
    const exported = await nodex([
      "export",
      part,
      "--regtest",
      "--datadir",
      datadir("source"),
      "--from",
      "3",
    ]);
    expect(exported.stderr).toBe(`nodex export: exported 2 blocks, 3 to 4, to ${part}\n`);
    const run = await nodex(["import", part, "--regtest", "--datadir", datadir("orphan")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `nodex import: block 3 ${source.blocks[3]!.hash} refused (NO_PARENT): parent ${source.blocks[2]!.hash} is not known\n${summary(0, 0, 0)}`,
    );
  });

  it("reports a truncated file with the offset and index of the cut block", async () => {
    const bytes = readFileSync(CHAIN);
    const last = blockOffsets(bytes)[3]!;
    const cut = join(tmp, "cut.rlp");
    writeFileSync(cut, bytes.subarray(0, bytes.length - 5));
    const run = await nodex(["import", cut, "--regtest", "--datadir", datadir("orphan")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `${summary(3, 0, 3)}nodex import: ${cut} is truncated: the block at byte offset ${last} (block index 3) ends the file after ${bytes.length - 5 - last} bytes; it needs ${bytes.length - last} bytes\n`,
    );
  });
});
