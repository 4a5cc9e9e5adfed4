import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { type Address, nullLogger } from "@nodex/types";
import { afterAll, describe, expect, it } from "vitest";
import { openChain } from "../../src/chainSetup.js";
import {
  ChainFileError,
  type ExportCommand,
  exportChain,
  type FileItem,
  type ImportCommand,
  importChain,
  MAX_BLOCK_BYTES,
  type NodeConfig,
  parseCommandLine,
  rlpItems,
} from "../../src/index.js";

/** Lists of 3, 60 and 300 bytes of content: short and long (one and two length bytes) prefixes. */
const SHORT = Uint8Array.of(0xc3, 0x01, 0x02, 0x03);
const LONG1 = Uint8Array.of(0xf8, 60, ...new Uint8Array(60).fill(0x05));
const LONG2 = Uint8Array.of(0xf9, 0x01, 0x2c, ...new Uint8Array(300).fill(0x07));
const FILE = Uint8Array.from([...SHORT, ...LONG1, ...LONG2]);

async function items(bytes: Uint8Array, chunk: number): Promise<FileItem[]> {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += chunk) chunks.push(bytes.subarray(i, i + chunk));
  const out: FileItem[] = [];
  for await (const item of rlpItems(Readable.from(chunks), "f.rlp")) out.push(item);
  return out;
}

describe("rlpItems", () => {
  it.each([1, 2, 3, 7, 64, 1000])(
    "splits a stream in chunks of %i bytes into whole items",
    async (chunk) => {
      const got = await items(FILE, chunk);
      expect(got.map((i) => i.offset)).toEqual([0, 4, 66]);
      expect(got.map((i) => [...i.bytes])).toEqual([[...SHORT], [...LONG1], [...LONG2]]);
    },
  );

  it("reads an empty stream as no blocks", async () => {
    expect(await items(new Uint8Array(0), 10)).toEqual([]);
  });

  it("names the offset and index of a truncated last item", async () => {
    await expect(items(FILE.subarray(0, FILE.length - 10), 50)).rejects.toThrow(
      new ChainFileError(
        "f.rlp is truncated: the block at byte offset 66 (block index 2) ends the file after 293 bytes; it needs 303 bytes",
      ),
    );
    await expect(items(FILE.subarray(0, 67), 50)).rejects.toThrow(
      "f.rlp is truncated: the block at byte offset 66 (block index 2) ends the file after 1 bytes; its length prefix is cut off",
    );
  });

  it.each([
    [Uint8Array.of(0x83, 1, 2, 3), "expected an RLP list, found a byte string (prefix 0x83)"],
    [
      Uint8Array.of(0xf8, 10, ...new Uint8Array(10)),
      "invalid RLP: a list shorter than 56 bytes has a long length prefix",
    ],
    [Uint8Array.of(0xf9, 0, 60), "invalid RLP: the list length has leading zero bytes"],
    [
      Uint8Array.of(0xfb, 0xff, 0xff, 0xff, 0xff),
      `the list claims 4294967295 bytes, more than a block may hold (${MAX_BLOCK_BYTES})`,
    ],
  ])("refuses a bad prefix at its offset: %j", async (bad, why) => {
    await expect(items(Uint8Array.from([...SHORT, ...bad]), 3)).rejects.toThrow(
      new ChainFileError(`f.rlp: bad block at byte offset 4 (block index 1): ${why}`),
    );
  });
});

describe("exportChain and importChain", () => {
  const tmp = mkdtempSync(join(tmpdir(), "nodex-chainfile-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const command = (argv: string[]) =>
    parseCommandLine({ argv: [...argv, "--regtest"], env: {}, isTTY: false, cwd: tmp });

  it("moves five blocks, with a progress line every two", async () => {
    const opened = await openChain(
      (command(["--datadir", "a"]) as { config: NodeConfig }).config,
      nullLogger,
    );
    try {
      const coinbase = opened.chain.head.block.header.coinbase as Address;
      for (let i = 0; i < 5; i++) await opened.chain.mine([], { coinbase });
    } finally {
      await opened.db.close();
    }
    const lines: string[] = [];
    const out = { write: (text: string) => lines.push(text) };
    const exported = command(["export", "chain.rlp", "--datadir", "a", "--from", "2"]);
    expect(await exportChain(exported as ExportCommand, nullLogger, { out })).toBe(4);
    expect(lines).toEqual([
      `nodex export: exported 4 blocks, 2 to 5, to ${join(tmp, "chain.rlp")}\n`,
    ]);

    // block 1 first, then the file: one skipped, four imported
    const first = command(["export", "one.rlp", "--datadir", "a", "--to", "1"]);
    await exportChain(first as ExportCommand, nullLogger, { out });
    const one = command(["import", "one.rlp", "--datadir", "b"]) as ImportCommand;
    expect(await importChain(one, nullLogger, { out })).toEqual({
      imported: 1,
      skipped: 0,
      interrupted: false,
    });
    lines.length = 0;
    const all = command(["import", "chain.rlp", "--datadir", "b"]) as ImportCommand;
    const both = new PassThrough();
    both.end(
      Buffer.concat([readFileSync(join(tmp, "one.rlp")), readFileSync(join(tmp, "chain.rlp"))]),
    );
    const summary = await importChain({ ...all, file: "-" }, nullLogger, {
      out,
      stdin: both,
      progressEvery: 2,
    });
    expect(summary).toEqual({ imported: 4, skipped: 1, interrupted: false });
    expect(lines.slice(0, 2)).toEqual([
      expect.stringMatching(
        /^nodex import: 2 blocks read, 1 imported, 1 skipped, head 2 0x[0-9a-f]{64}\n$/,
      ),
      expect.stringMatching(
        /^nodex import: 4 blocks read, 3 imported, 1 skipped, head 4 0x[0-9a-f]{64}\n$/,
      ),
    ]);
    expect(lines[2]).toMatch(
      /^nodex import: imported 4 blocks, skipped 1 already there; head 5 0x[0-9a-f]{64}, state root 0x[0-9a-f]{64}\n$/,
    );
  });
});
