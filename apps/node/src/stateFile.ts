import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { gunzipSync } from "node:zlib";
import type { BlockProducer } from "@nodex/miner";
import { decodeStateFile, encodeStateFile } from "@nodex/state";
import type { Logger } from "@nodex/types";

/**
 * `--state FILE` (regtest and devnet): the state the node starts from and leaves behind, as
 * Anvil's `--state`. At start an existing file becomes the state after the head (nothing of it
 * is taken unless all of it checks out); at shutdown the state after the head is written there,
 * atomically (a temporary file, synced, renamed over the old one), so a crash at any moment
 * leaves the old file or the new one whole.
 */
export async function loadStateFile(
  path: string,
  producer: BlockProducer,
  logger: Logger,
): Promise<void> {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      logger.info("No state file yet: it is written at shutdown", { path });
      return;
    }
    throw new Error(`--state ${path}: cannot be read: ${(err as Error).message}`);
  }
  try {
    const json = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
    const file = decodeStateFile(json);
    await producer.loadState(file);
    logger.info("Loaded the state file", {
      path,
      fromBlock: file.block,
      nodes: file.nodes.length,
      codes: file.codes.length,
    });
  } catch (err) {
    throw new Error(`--state ${path}: ${(err as Error).message}`);
  }
}

/** Writes the state after the head to `path`, atomically (see `loadStateFile`). */
export async function saveStateFile(
  path: string,
  producer: BlockProducer,
  logger: Logger,
): Promise<void> {
  const file = await producer.dumpState();
  const bytes = encodeStateFile(file);
  const temp = `${path}.tmp`;
  const fd = openSync(temp, "w");
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  // The rename itself is durable once the folder is synced.
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  logger.info("Wrote the state file", { path, block: file.block, bytes: bytes.length });
}
