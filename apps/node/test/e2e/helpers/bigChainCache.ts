import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BigChain, type BigChainOptions, buildBigChain } from "./bigChain.js";
import { startNode } from "./node.js";

// One build of a big chain shared by the test files that need it: built once, on a devnet node
// of its own (stopped before anything is copied), into a folder of the OS's temp directory named
// after the options and a fingerprint of the code (the built Nodex, the lock file, the
// builder's source); each user gets a copy of the datadir. A build is written to a folder of its
// own and renamed into place when complete, so a reader never sees half of one. One build at a
// time: a lock folder holds the builder's process id, and others wait for the build (or take
// the lock over when that process is gone).

const CACHE_PREFIX = "nodex-big-chain-";
/** Entries unused this long are removed when another is made. */
const STALE_MS = 24 * 3_600_000;
/** How long a user waits for another's build of the same chain. */
const WAIT_MS = 300_000;

const root = fileURLToPath(new URL("../../../../../", import.meta.url));

/** What makes a build: the built packages, the dependencies' versions, the builder itself. */
function fingerprint(): string {
  const hash = createHash("sha256");
  const add = (path: string) => {
    hash.update(path.slice(root.length));
    hash.update(readFileSync(path));
  };
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".js") || entry.name.endsWith(".json")) add(path);
    }
  };
  walk(join(root, "apps/node/dist"));
  for (const pkg of readdirSync(join(root, "packages")).sort()) {
    const dist = join(root, "packages", pkg, "dist");
    if (existsSync(dist)) walk(dist);
  }
  add(join(root, "package-lock.json"));
  add(fileURLToPath(new URL("./bigChain.ts", import.meta.url)));
  add(fileURLToPath(import.meta.url));
  return hash.digest("hex");
}

/** The cache folder of these options with this code. */
export function bigChainCacheDir(opts: BigChainOptions): string {
  const key = createHash("sha256")
    .update(JSON.stringify({ ...opts, contracts: opts.contracts ?? 1 }))
    .update(fingerprint())
    .digest("hex")
    .slice(0, 20);
  return join(tmpdir(), `${CACHE_PREFIX}${key}`);
}

export interface BigChainCopy {
  /** A datadir of its own holding the chain: start a node on it (`startNode({datadir})`). */
  readonly datadir: string;
  readonly chain: BigChain;
  /** Whether this call built the chain (false: it was in the cache). */
  readonly built: boolean;
  /** Removes the copy (after its node has stopped). */
  remove(): void;
}

const toJSON = (chain: BigChain) =>
  JSON.stringify(chain, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v), 1);
const fromJSON = (text: string) =>
  JSON.parse(text, (_k, v: unknown) =>
    typeof v === "string" && /^\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v,
  ) as BigChain;

/** Builds the chain on a node of its own and moves the stopped node's datadir into `dir`. */
async function buildInto(dir: string, opts: BigChainOptions): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), `${CACHE_PREFIX}build-`));
  try {
    const datadir = join(work, "datadir");
    const node = await startNode({ network: "--devnet", datadir, args: ["--no-automine"] });
    const chain = await buildBigChain(node, opts).finally(() => node.stop());
    const code = await node.stop();
    if (code !== 0) throw new Error(`the node that built the chain exited with ${code}`);
    writeFileSync(join(work, "chain.json"), toJSON(chain));
    try {
      renameSync(work, dir);
    } catch (err) {
      // Another build of the same chain got there first: its copy is as good as this one.
      if (!existsSync(join(dir, "chain.json"))) throw err;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Takes the lock folder `lock` (mkdir is atomic), or takes it over from a process that is gone;
 * false while a live process holds it.
 */
function takeLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, "pid"), String(process.pid));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  let holder: number;
  try {
    holder = Number(readFileSync(join(lock, "pid"), "utf8"));
  } catch {
    // Made a moment ago, its process id not written yet (a live holder), unless long ago.
    const made = statSync(lock, { throwIfNoEntry: false });
    if (made === undefined || Date.now() - made.mtimeMs < 10_000) return false;
    holder = 0;
  }
  if (isAlive(holder)) return false;
  rmSync(lock, { recursive: true, force: true });
  return takeLock(lock);
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes other entries of the cache unused for a day (older code, other options). */
function pruneStale(keep: string): void {
  const now = Date.now();
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name);
    if (
      !name.startsWith(CACHE_PREFIX) ||
      path === keep ||
      name.startsWith(`${CACHE_PREFIX}build-`) ||
      name.endsWith(".lock")
    )
      continue;
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already, or another user's: leave it.
    }
  }
}

/**
 * A copy of a datadir holding the chain of `opts` (built now if the cache has none for this
 * code), with what `buildBigChain` returned when it was built. The copy has no node key: a node
 * started on it makes its own peer identity.
 */
export async function bigChainDatadir(opts: BigChainOptions): Promise<BigChainCopy> {
  const dir = bigChainCacheDir(opts);
  let built = false;
  const deadline = Date.now() + WAIT_MS;
  while (!existsSync(join(dir, "chain.json"))) {
    if (takeLock(`${dir}.lock`)) {
      try {
        if (!existsSync(join(dir, "chain.json"))) {
          await buildInto(dir, opts);
          built = true;
          pruneStale(dir);
        }
      } finally {
        rmSync(`${dir}.lock`, { recursive: true, force: true });
      }
    } else if (Date.now() > deadline) {
      throw new Error(`another process has been building ${dir} for ${WAIT_MS / 1000} s`);
    } else {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const datadir = mkdtempSync(join(tmpdir(), "nodex-e2e-"));
  cpSync(join(dir, "datadir"), datadir, { recursive: true });
  rmSync(join(datadir, "nodekey"), { force: true });
  const now = new Date();
  utimesSync(dir, now, now);
  return {
    datadir,
    chain: fromJSON(readFileSync(join(dir, "chain.json"), "utf8")),
    built,
    remove: () => rmSync(datadir, { recursive: true, force: true }),
  };
}
