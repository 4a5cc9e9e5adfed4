import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  writeSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { type Address, bytesToHex, hexToBytes } from "@nodex/types";

/** The first line of a journal; lines starting with `#` are comments. */
export const JOURNAL_HEADER =
  "# nodex txpool journal v1: one signed transaction (RLP, 0x hex) a line, then its sender for one made without a key";

/**
 * One line: a signed transaction, and the sender of one the node made without a key (a
 * development network's impersonated account), whose sender cannot be recovered.
 */
export interface JournalEntry {
  readonly raw: Uint8Array;
  readonly sender?: Address;
}

function entryLine(entry: JournalEntry): string {
  return entry.sender === undefined
    ? `${bytesToHex(entry.raw)}\n`
    : `${bytesToHex(entry.raw)} ${bytesToHex(entry.sender)}\n`;
}

export interface JournalContents {
  /** The transactions, in file order. */
  readonly entries: readonly JournalEntry[];
  /** One sentence per line that is not a transaction's hex. */
  readonly problems: readonly string[];
}

/** Reads a journal; a missing file is an empty journal, a line that is not hex a problem. */
export async function readJournal(path: string): Promise<JournalContents> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { entries: [], problems: [] };
    return { entries: [], problems: [`journal ${path} unreadable: ${(err as Error).message}`] };
  }
  const entries: JournalEntry[] = [];
  const problems: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const [tx, sender, ...rest] = line.split(" ");
    let bytes: Uint8Array | undefined;
    let from: Uint8Array | undefined;
    try {
      if (tx!.startsWith("0x")) bytes = hexToBytes(tx!);
      if (sender?.startsWith("0x")) from = hexToBytes(sender);
    } catch {
      bytes = undefined;
    }
    if (bytes === undefined || bytes.length === 0) {
      problems.push(`journal line ${i + 1}: not a transaction's 0x hex`);
      continue;
    }
    if (rest.length > 0 || (sender !== undefined && from?.length !== 20)) {
      problems.push(`journal line ${i + 1}: not a transaction and its sender's address`);
      continue;
    }
    entries.push(from === undefined ? { raw: bytes } : { raw: bytes, sender: from as Address });
  }
  return { entries, problems };
}

/**
 * Replaces the journal with these transactions: a temp file, fsync, then rename over the old.
 * Synchronous, like the appends: a rewrite holds a few lines (the live local transactions) and
 * comes once per hundreds of transactions, and doing it in place keeps the pool's writes in
 * order without a queue of file operations that every admission would wait behind.
 */
export function writeJournal(path: string, entries: readonly JournalEntry[]): void {
  let text = `${JOURNAL_HEADER}\n`;
  for (const entry of entries) text += entryLine(entry);
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp`;
  const fd = openSync(temp, "w");
  try {
    writeAll(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

/**
 * Opens the journal for appending (a file descriptor), writing the header first when the file
 * is new. Appends are not synced: a write the operating system took survives the node's process
 * being killed; a power cut may lose the last ones, as with geth's journal.
 */
export function openJournalForAppend(path: string): number {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, "a");
  try {
    if (fstatSync(fd).size === 0) writeAll(fd, `${JOURNAL_HEADER}\n`);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return fd;
}

/**
 * Appends one transaction's line: a write of a few hundred bytes to the page cache, done on
 * the spot (microseconds) rather than through the thread pool.
 */
export function appendJournal(fd: number, entry: JournalEntry): number {
  return writeAll(fd, entryLine(entry));
}

/**
 * Writes all of `text`, or throws: a write that fills the disk writes part of what it was
 * given and reports the count, without an error; the rest then fails with ENOSPC. Returns the
 * bytes written.
 */
function writeAll(fd: number, text: string): number {
  const bytes = Buffer.from(text, "latin1");
  let done = 0;
  while (done < bytes.length) {
    const n = writeSync(fd, bytes, done, bytes.length - done);
    if (n <= 0) {
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), {
        code: "ENOSPC",
      });
    }
    done += n;
  }
  return done;
}

/** Closes a journal opened by `openJournalForAppend`. */
export function closeJournal(fd: number): void {
  closeSync(fd);
}
