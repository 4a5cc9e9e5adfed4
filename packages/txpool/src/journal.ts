import { type FileHandle, mkdir, open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";
import { bytesToHex, hexToBytes } from "@nodex/types";

/** The first line of a journal; lines starting with `#` are comments. */
export const JOURNAL_HEADER =
  "# nodex txpool journal v1: one signed transaction (RLP, 0x hex) a line";

export interface JournalContents {
  /** The raw transactions, in file order. */
  readonly raws: readonly Uint8Array[];
  /** One sentence per line that is not a transaction's hex. */
  readonly problems: readonly string[];
}

/** Reads a journal; a missing file is an empty journal, a line that is not hex a problem. */
export async function readJournal(path: string): Promise<JournalContents> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { raws: [], problems: [] };
    return { raws: [], problems: [`journal ${path} unreadable: ${(err as Error).message}`] };
  }
  const raws: Uint8Array[] = [];
  const problems: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    let bytes: Uint8Array | undefined;
    try {
      if (line.startsWith("0x")) bytes = hexToBytes(line);
    } catch {
      bytes = undefined;
    }
    if (bytes === undefined || bytes.length === 0) {
      problems.push(`journal line ${i + 1}: not a transaction's 0x hex`);
      continue;
    }
    raws.push(bytes);
  }
  return { raws, problems };
}

/** Replaces the journal with these transactions: a temp file, fsync, then rename over the old. */
export async function writeJournal(path: string, raws: readonly Uint8Array[]): Promise<void> {
  let text = `${JOURNAL_HEADER}\n`;
  for (const raw of raws) text += `${bytesToHex(raw)}\n`;
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.tmp`;
  const file = await open(temp, "w");
  try {
    await file.writeFile(text, "utf8");
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
}

/**
 * Opens the journal for appending, writing the header first when the file is new. Appends are
 * not synced: a write the operating system took survives the node's process being killed; a
 * power cut may lose the last ones, as with geth's journal.
 */
export async function openJournalForAppend(path: string): Promise<FileHandle> {
  await mkdir(dirname(path), { recursive: true });
  const file = await open(path, "a");
  try {
    if ((await file.stat()).size === 0) await file.write(`${JOURNAL_HEADER}\n`);
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
  return file;
}

/** Appends one transaction's line. */
export async function appendJournal(file: FileHandle, raw: Uint8Array): Promise<void> {
  await file.write(`${bytesToHex(raw)}\n`);
}
