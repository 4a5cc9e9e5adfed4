import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ChainFileError, type FileItem, MAX_BLOCK_BYTES, rlpItems } from "../../src/index.js";

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
