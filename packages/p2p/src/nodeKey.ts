import { randomBytes } from "node:crypto";
import { link, lstat, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from "@libp2p/crypto/keys";
import type { PeerId, PrivateKey } from "@libp2p/interface";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { type Logger, nullLogger } from "@nodex/types";
import { P2PError, P2PErrorCode } from "./errors.js";

/** The name of the key file in its directory (the datadir). */
export const NODE_KEY_FILE = "nodekey";

/** Owner read and write only. */
const KEY_FILE_MODE = 0o600;

/**
 * The node's identity on the network: an Ed25519 private key and the peer id derived from it.
 * Persisted as the hex of libp2p's protobuf form of the key in `<dir>/nodekey`, mode 600.
 */
export class NodeKey {
  readonly privateKey: PrivateKey;
  readonly peerId: PeerId;
  /** The file the key was read from or written to; undefined for a key held in memory only. */
  readonly path: string | undefined;

  private constructor(privateKey: PrivateKey, path: string | undefined) {
    this.privateKey = privateKey;
    this.peerId = peerIdFromPrivateKey(privateKey);
    this.path = path;
  }

  /** The peer id in its text form (`12D3KooW…`). */
  get id(): string {
    return this.peerId.toString();
  }

  /** A new key that is not written anywhere (tests, throwaway nodes). */
  static async ephemeral(): Promise<NodeKey> {
    return new NodeKey(await generateKeyPair("Ed25519"), undefined);
  }

  /**
   * Reads `<dir>/nodekey`, or creates it (and `dir`) when it does not exist. Refuses, with a
   * `P2PError`, a file that others may read (`KEY_PERMISSIONS`) or that holds no key
   * (`KEY_CORRUPT`): a broken key is never replaced, since that would change the node's id.
   */
  static async loadOrCreate(dir: string, logger: Logger = nullLogger): Promise<NodeKey> {
    const path = join(dir, NODE_KEY_FILE);
    const existing = await readKeyFile(path);
    if (existing !== undefined) return new NodeKey(existing, path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const key = await generateKeyPair("Ed25519");
    const created = await writeKeyFile(path, key);
    if (!created) {
      // Another process wrote it between our read and our write: theirs is the key.
      const theirs = await readKeyFile(path);
      if (theirs === undefined) throw corrupt(path, "the file vanished while it was created");
      return new NodeKey(theirs, path);
    }
    const nodeKey = new NodeKey(key, path);
    logger.info("Created node key", { path, peerId: nodeKey.id });
    return nodeKey;
  }
}

/** The key in `path`; undefined when there is no such file. */
async function readKeyFile(path: string): Promise<PrivateKey | undefined> {
  let stats: Awaited<ReturnType<typeof lstat>>;
  try {
    stats = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  if (!stats.isFile()) throw corrupt(path, "not a regular file");
  if (process.platform !== "win32" && (stats.mode & 0o077) !== 0) {
    const mode = (stats.mode & 0o777).toString(8);
    throw new P2PError(
      P2PErrorCode.KEY_PERMISSIONS,
      `node key ${path} has mode ${mode}: others may read it; make it private (chmod 600 ${path})`,
      { path, mode },
    );
  }
  const text = (await readFile(path, "utf8")).trim();
  if (!/^([0-9a-f]{2})+$/i.test(text)) throw corrupt(path, "not a hex string");
  try {
    return privateKeyFromProtobuf(Buffer.from(text, "hex"));
  } catch (err) {
    throw corrupt(path, (err as Error).message);
  }
}

/**
 * Writes the key to `path` without ever replacing a file there: to a private temp file first,
 * then linked into place. False when `path` already exists.
 */
async function writeKeyFile(path: string, key: PrivateKey): Promise<boolean> {
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const text = `${Buffer.from(privateKeyToProtobuf(key)).toString("hex")}\n`;
  await writeFile(temp, text, { mode: KEY_FILE_MODE, flag: "wx" });
  try {
    await link(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

function corrupt(path: string, reason: string): P2PError {
  return new P2PError(
    P2PErrorCode.KEY_CORRUPT,
    `node key ${path} does not hold a private key (${reason}); move it away to create a new one, which changes the peer id`,
    { path, reason },
  );
}
