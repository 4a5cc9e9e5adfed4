import { existsSync } from "node:fs";
import { type FileHandle, open, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import type { Chain } from "@nodex/chain";
import { StateError, StateErrorCode } from "@nodex/state";
import {
  type Block,
  bytesToHex,
  concatBytes,
  decodeBlock,
  encodeBlock,
  headerHash,
  type Logger,
  NodexError,
} from "@nodex/types";
import { type OpenedChain, openChain } from "./chainSetup.js";
import type { ExportCommand, ImportCommand } from "./config.js";

/**
 * `nodex export` and `nodex import`: a chain as a file, in geth's format: the RLP of each block
 * (`[header, [transactions], [uncle headers]]`), one after the other, with nothing around them.
 */

/** Where the commands print their progress and results (standard error by default). */
export interface Output {
  write(text: string): unknown;
}

/** A chain-file command failed; the message says why. Exit code 1. */
export class ChainFileError extends NodexError<"NODE_CHAIN_FILE"> {
  constructor(message: string, options?: { cause?: unknown }) {
    super("NODE_CHAIN_FILE", message, {}, options);
    this.name = "ChainFileError";
  }
}

/** Blocks between two progress lines of an import. */
export const PROGRESS_EVERY = 1000;
/** The largest block a chain file may hold: a longer length prefix is taken for corruption. */
export const MAX_BLOCK_BYTES = 64 * 1024 * 1024;

export interface ExportIO {
  readonly stdout?: Writable;
  readonly out?: Output;
}

/** Writes the canonical blocks `from`..`to` to the file; resolves with the count written. */
export async function exportChain(
  command: ExportCommand,
  logger: Logger,
  io: ExportIO = {},
): Promise<number> {
  const { config } = command;
  const out = io.out ?? process.stderr;
  if (!existsSync(join(config.datadir, "db"))) {
    throw new ChainFileError(`no chain in ${config.datadir}: nothing to export`);
  }
  const opened = await openForCommand(command, logger);
  let file: FileHandle | undefined;
  let written = 0;
  try {
    const { chain } = opened;
    const head = chain.head.block.header.number;
    const from = command.from ?? 1n;
    const to = command.to ?? head;
    if (to > head) {
      throw new ChainFileError(`--to ${to} is past the head of the chain (block ${head})`);
    }
    if (command.from !== undefined && from > head) {
      throw new ChainFileError(`--from ${from} is past the head of the chain (block ${head})`);
    }
    if (command.file !== "-") {
      try {
        file = await open(command.file, command.force ? "w" : "wx");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EEXIST") {
          throw new ChainFileError(`${command.file} exists: pass --force to overwrite it`);
        }
        throw new ChainFileError(`cannot write ${command.file}: ${(err as Error).message}`);
      }
    }
    const sink = file === undefined ? (io.stdout ?? process.stdout) : undefined;
    for (let n = from; n <= to; n++) {
      const stored = await chain.getBlockByNumber(n);
      if (stored === undefined) throw new ChainFileError(`canonical block ${n} is missing`);
      const bytes = encodeBlock(stored.block);
      if (file !== undefined) await file.write(bytes);
      else await writeTo(sink!, bytes);
      written++;
    }
    if (file !== undefined) {
      await file.close();
      file = undefined;
    }
    const where = command.file === "-" ? "standard output" : command.file;
    out.write(
      written === 0
        ? `nodex export: exported 0 blocks to ${where} (the head is block ${head})\n`
        : `nodex export: exported ${written} blocks, ${from} to ${to}, to ${where}\n`,
    );
    return written;
  } catch (err) {
    if (file !== undefined) {
      await file.close().catch(() => {});
      await unlink(command.file).catch(() => {});
    }
    throw err;
  } finally {
    await opened.db.close();
  }
}

/** Writes to a stream, waiting while its buffer is full. */
async function writeTo(stream: Writable, bytes: Uint8Array): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    stream.once("error", onError);
    stream.write(bytes, (err) => {
      stream.off("error", onError);
      if (err) reject(err);
      else resolve();
    });
  });
}

export interface ImportIO {
  readonly stdin?: Readable;
  readonly out?: Output;
  /** Blocks between two progress lines; `PROGRESS_EVERY` unless told. */
  readonly progressEvery?: number;
  /** Aborted to stop after the block being imported, or at once while reading (SIGINT, SIGTERM). */
  readonly signal?: AbortSignal;
}

/** What an import did. */
export interface ImportSummary {
  readonly imported: number;
  readonly skipped: number;
  /** The block the chain refused, when it stopped at one. */
  readonly refused?: {
    readonly number: bigint;
    readonly hash: string;
    readonly result: string;
    readonly reason: string;
  };
  readonly interrupted: boolean;
}

/**
 * Imports the blocks of the file in order, one `Chain.importBlock` (one atomic write) at a time,
 * reading the file in chunks. Throws `ChainFileError` for a file that is not a stream of blocks;
 * resolves with the summary otherwise, `refused` set when the chain refused a block.
 */
export async function importChain(
  command: ImportCommand,
  logger: Logger,
  io: ImportIO = {},
): Promise<ImportSummary> {
  const out = io.out ?? process.stderr;
  const source = command.file === "-" ? "standard input" : command.file;
  let input: Readable;
  let file: FileHandle | undefined;
  if (command.file === "-") input = io.stdin ?? process.stdin;
  else {
    try {
      file = await open(command.file, "r");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new ChainFileError(
        `cannot read ${command.file}: ${code === "ENOENT" ? "file not found" : (err as Error).message}`,
      );
    }
    input = file.createReadStream({ highWaterMark: 1 << 20 });
  }
  let opened: OpenedChain;
  try {
    opened = await openForCommand(command, logger);
  } catch (err) {
    input.destroy();
    await file?.close().catch(() => {});
    throw err;
  }
  const { chain } = opened;
  let imported = 0;
  let skipped = 0;
  let refused: ImportSummary["refused"];
  let interrupted = false;
  const summary = (): ImportSummary => ({
    imported,
    skipped,
    interrupted,
    ...(refused === undefined ? {} : { refused }),
  });
  const stopReading = () => input.destroy();
  io.signal?.addEventListener("abort", stopReading, { once: true });
  try {
    let index = 0;
    for await (const { bytes, offset } of rlpItems(input, source)) {
      let block: Block;
      try {
        block = decodeBlock(bytes);
      } catch (err) {
        throw new ChainFileError(
          `${source}: bad block at byte offset ${offset} (block index ${index}): ${(err as Error).message}`,
        );
      }
      const result = await chain.importBlock(block);
      index++;
      if (result.result === "NO_PARENT" || result.result === "INVALID_BLOCK") {
        refused = {
          number: block.header.number,
          hash: bytesToHex(headerHash(block.header)),
          result: result.result,
          reason: result.reason,
        };
        break;
      }
      if (result.result === "EXIST") skipped++;
      else imported++;
      if (index % (io.progressEvery ?? PROGRESS_EVERY) === 0) {
        out.write(
          `nodex import: ${index} blocks read, ${imported} imported, ${skipped} skipped, head ${headText(chain)}\n`,
        );
      }
      if (io.signal?.aborted) break;
    }
    // a stream destroyed by the signal may just end
    interrupted = io.signal?.aborted === true && refused === undefined;
  } catch (err) {
    // reading a stream destroyed by the signal fails: that is the interruption
    if (!io.signal?.aborted) {
      if (err instanceof ChainFileError) printSummary(out, chain, summary());
      throw err;
    }
    interrupted = true;
  } finally {
    io.signal?.removeEventListener("abort", stopReading);
    input.destroy();
    await file?.close().catch(() => {});
    await opened.db.close();
  }
  printSummary(out, chain, summary());
  return summary();
}

function headText(chain: Chain): string {
  return `${chain.head.block.header.number} ${bytesToHex(chain.head.hash)}`;
}

function printSummary(out: Output, chain: Chain, s: ImportSummary): void {
  if (s.refused !== undefined) {
    out.write(
      `nodex import: block ${s.refused.number} ${s.refused.hash} refused (${s.refused.result}): ${s.refused.reason}\n`,
    );
  }
  if (s.interrupted) out.write("nodex import: interrupted\n");
  out.write(
    `nodex import: imported ${s.imported} blocks, skipped ${s.skipped} already there; head ${headText(chain)}, state root ${bytesToHex(chain.head.block.header.stateRoot)}\n`,
  );
}

/** Opens the chain of the command's datadir, turning LevelDB's lock into a plain refusal. */
async function openForCommand(
  command: ExportCommand | ImportCommand,
  logger: Logger,
): Promise<OpenedChain> {
  try {
    return await openChain(command.config, logger);
  } catch (err) {
    if (
      err instanceof StateError &&
      err.code === StateErrorCode.OPEN_FAILED &&
      err.meta.locked === true
    ) {
      throw new ChainFileError(
        `the database in ${command.config.datadir} is in use by another process (a running node?): stop it before nodex ${command.kind}`,
      );
    }
    throw err;
  }
}

/** One RLP item of a chain file and where it starts. */
export interface FileItem {
  readonly bytes: Uint8Array;
  readonly offset: number;
}

/**
 * Splits a byte stream into whole RLP lists by their length prefixes, holding at most one item
 * and one chunk in memory. Throws `ChainFileError` naming the offset and index of an item whose
 * prefix is not a list's, is longer than `MAX_BLOCK_BYTES`, or runs past the end of the stream.
 */
export async function* rlpItems(
  chunks: AsyncIterable<Uint8Array>,
  source: string,
): AsyncGenerator<FileItem> {
  let buffer: Uint8Array = new Uint8Array(0);
  /** Offset in the stream of `buffer[0]`. */
  let base = 0;
  let index = 0;
  for await (const chunk of chunks) {
    buffer = buffer.length === 0 ? chunk : concatBytes(buffer, chunk);
    let at = 0;
    for (;;) {
      const size = itemSize(buffer, at, base + at, index, source);
      if (size === undefined || at + size > buffer.length) break;
      // a copy: blocks the chain keeps must not hold on to the whole chunk
      yield { bytes: new Uint8Array(buffer.subarray(at, at + size)), offset: base + at };
      at += size;
      index++;
    }
    base += at;
    buffer = buffer.subarray(at);
  }
  if (buffer.length > 0) {
    const size = itemSize(buffer, 0, base, index, source);
    const needs = size === undefined ? "its length prefix is cut off" : `it needs ${size} bytes`;
    throw new ChainFileError(
      `${source} is truncated: the block at byte offset ${base} (block index ${index}) ends the file after ${buffer.length} bytes; ${needs}`,
    );
  }
}

/**
 * The whole length (prefix included) of the item starting at `at`, or `undefined` when its
 * prefix is not all in `bytes` yet.
 */
function itemSize(
  bytes: Uint8Array,
  at: number,
  offset: number,
  index: number,
  source: string,
): number | undefined {
  if (at >= bytes.length) return undefined;
  const bad = (why: string) =>
    new ChainFileError(
      `${source}: bad block at byte offset ${offset} (block index ${index}): ${why}`,
    );
  const first = bytes[at]!;
  if (first < 0xc0) {
    throw bad(`expected an RLP list, found a byte string (prefix 0x${first.toString(16)})`);
  }
  if (first <= 0xf7) return 1 + first - 0xc0;
  const lengthBytes = first - 0xf7;
  if (at + 1 + lengthBytes > bytes.length) return undefined;
  if (bytes[at + 1] === 0) throw bad("invalid RLP: the list length has leading zero bytes");
  let length = 0;
  for (let i = 0; i < lengthBytes; i++) length = length * 256 + bytes[at + 1 + i]!;
  if (length < 56) throw bad("invalid RLP: a list shorter than 56 bytes has a long length prefix");
  if (length > MAX_BLOCK_BYTES) {
    throw bad(`the list claims ${length} bytes, more than a block may hold (${MAX_BLOCK_BYTES})`);
  }
  return 1 + lengthBytes + length;
}
