import { existsSync, readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ChainAnchor } from "@nodex/chain";
import { type ForkHistory, RPCError } from "@nodex/rpc";
import {
  Bucket,
  type Database,
  ForkSource,
  redactUrl,
  StateError,
  StateErrorCode,
  Upstream,
} from "@nodex/state";
import {
  type BlockHeader,
  bytesToHex,
  decodeHeader,
  encodeHeader,
  headerHash,
  hexToBytes,
  keccak256,
  type Logger,
  type NetworkPreset,
  NodexError,
} from "@nodex/types";
import { DEFAULT_FORK_RPS, type ForkConfig, type NodeConfig } from "./config.js";

export const ForkErrorCode = {
  /** The upstream has no such block, or not the one the operator named. */
  BLOCK: "FORK_BLOCK",
  /** The upstream's block cannot be read as a header. */
  HEADER: "FORK_HEADER",
  /** The datadir holds a fork of another block. */
  DATADIR: "FORK_DATADIR",
  /** A fork mode not supported yet (`--fork-verify off`). */
  UNSUPPORTED: "FORK_UNSUPPORTED",
} as const;
export type ForkErrorCode = (typeof ForkErrorCode)[keyof typeof ForkErrorCode];

export class ForkError extends NodexError<ForkErrorCode> {
  constructor(code: ForkErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "ForkError";
  }
}

/** How far below the upstream's head a fork goes on from unless told: out of reach of its reorgs. */
export const FORK_DEPTH = 5n;

/** The block a fork goes on from. */
export interface ForkPoint {
  readonly number: bigint;
  /** The upstream's hash of the block (0x-hex). */
  readonly hash: string;
  /** The header the local chain starts with. */
  readonly header: BlockHeader;
  /**
   * Whether `header` is the upstream's own (a Nodex upstream: the local chain's first block has
   * the upstream's hash), or one made from its fields (other nodes' headers have another form).
   */
  readonly exact: boolean;
}

/** What the datadir keeps of its fork: the point, so that a restart needs no upstream. */
interface ForkFile {
  readonly format: "nodex-fork/1";
  readonly number: string;
  readonly hash: string;
  readonly exact: boolean;
  /** The local chain's first header, RLP as 0x-hex. */
  readonly header: string;
  /** The upstreams it was made from, redacted (no credentials). */
  readonly upstreams: readonly string[];
}

const FORK_FILE = "fork.json";

/** A fork point, and whether it is new (not yet written to the datadir: see `keepForkPoint`). */
export interface FoundForkPoint {
  readonly point: ForkPoint;
  readonly kept: boolean;
}

/**
 * The fork point: the one the datadir holds when it holds one (checked against the settings),
 * otherwise the upstream's block the settings name (`kept: false`: the caller writes it with
 * `keepForkPoint` once the datadir's chain has taken it).
 */
export async function forkPoint(
  upstream: Upstream,
  fork: ForkConfig,
  network: NetworkPreset,
  datadir: string,
  logger: Logger,
): Promise<FoundForkPoint> {
  const kept = readForkFile(datadir);
  if (kept !== undefined) {
    if (fork.block !== undefined && fork.block !== kept.number)
      throw new ForkError(
        ForkErrorCode.DATADIR,
        `the datadir ${datadir} holds a fork of block ${kept.number}, not of --fork-block ${fork.block}: use another --datadir for another fork point`,
      );
    if (fork.blockHash !== undefined && fork.blockHash !== kept.hash)
      throw new ForkError(
        ForkErrorCode.DATADIR,
        `the datadir ${datadir} holds a fork of block ${kept.hash}, not of --fork-block-hash ${fork.blockHash}: use another --datadir for another fork point`,
      );
    logger.info("Fork", { block: kept.number.toString(), hash: kept.hash, from: "datadir" });
    return { point: kept, kept: true };
  }
  const point = await askForkPoint(upstream, fork, network);
  logger.info("Fork", {
    block: point.number.toString(),
    hash: point.hash,
    header: point.exact ? "the upstream's" : "made from the upstream's fields",
  });
  return { point, kept: false };
}

/**
 * Writes a new fork point to the datadir (fork.json), so that a restart needs no upstream.
 * Only once the datadir's chain has taken the point: a datadir that refused it (one holding
 * another chain) is left as it was, with no fork.json to contradict it.
 */
export function keepForkPoint(datadir: string, point: ForkPoint, urls: readonly string[]) {
  return writeForkFile(datadir, point, urls);
}

/**
 * Refuses a datadir that holds a fork when the node starts without `--fork-url`: its state
 * past what was fetched is the upstream's, which only a fork's settings can reach.
 */
export function refuseForkDatadir(datadir: string): void {
  const kept = readForkFile(datadir);
  if (kept === undefined) return;
  const path = join(datadir, FORK_FILE);
  const { upstreams } = JSON.parse(readFileSync(path, "utf8")) as Partial<ForkFile>;
  const from =
    Array.isArray(upstreams) && upstreams.length > 0 ? ` of ${upstreams.join(", ")}` : "";
  throw new ForkError(
    ForkErrorCode.DATADIR,
    `the datadir ${datadir} holds a fork of block ${kept.number}${from} (${path}): start it with --fork-url (the upstream is asked only for state not fetched yet), or use another --datadir`,
  );
}

/** The upstream's fork block, as the settings name it. */
async function askForkPoint(
  upstream: Upstream,
  fork: ForkConfig,
  network: NetworkPreset,
): Promise<ForkPoint> {
  let number = fork.block;
  if (number === undefined && fork.blockHash !== undefined) {
    const byHash = await upstream.call("eth_getBlockByHash", [fork.blockHash, false]);
    if (byHash === null)
      throw new ForkError(
        ForkErrorCode.BLOCK,
        `the upstream has no block ${fork.blockHash} (--fork-block-hash)`,
      );
    number = quantity(field(byHash, "number"), "number");
  }
  if (number === undefined) {
    const head = quantity(await upstream.call("eth_blockNumber", []), "eth_blockNumber");
    number = head > FORK_DEPTH ? head - FORK_DEPTH : 0n;
  }
  const block = await upstream.call("eth_getBlockByNumber", [hex(number), false]);
  if (block === null) {
    const head = await upstream.call("eth_blockNumber", []).catch(() => undefined);
    throw new ForkError(
      ForkErrorCode.BLOCK,
      `the upstream has no block ${number}${typeof head === "string" ? ` (its head is ${BigInt(head)})` : ""}`,
    );
  }
  const hash = data(field(block, "hash"), "hash", 32);
  if (fork.blockHash !== undefined && hash !== fork.blockHash)
    throw new ForkError(
      ForkErrorCode.BLOCK,
      `the upstream's block ${number} has hash ${hash}, not ${fork.blockHash} (--fork-block-hash)`,
    );
  // A Nodex (or reference node) upstream's JSON block shows every field of its header: the
  // header made from them is its own, of the same hash. Another node's is of this chain's form.
  const made = headerFromJson(block, network);
  await checkEmptyState(upstream, number, made.stateRoot);
  return { number, hash, header: made, exact: bytesToHex(headerHash(made)) === hash };
}

/** The state root of a trie with no keys. */
const EMPTY_TRIE_ROOT = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

/**
 * Refuses a fork block whose header names an empty state while the upstream's proofs show
 * accounts there: Anvil's genesis block says so of its funded accounts. Such a fork would start
 * from nothing (an empty root needs no fetch), silently. Anything else the upstream answers
 * (an error, no proof) leaves the state reads to say what is wrong.
 */
async function checkEmptyState(upstream: Upstream, number: bigint, stateRoot: Uint8Array) {
  if (bytesToHex(stateRoot) !== EMPTY_TRIE_ROOT) return;
  const probe = `0x${"00".repeat(20)}`;
  const answer = await upstream.call("eth_getProof", [probe, [], hex(number)]).catch(() => null);
  const nodes = (answer as { accountProof?: unknown } | null)?.accountProof;
  if (!Array.isArray(nodes) || nodes.length === 0 || nodes[0] === "0x80") return;
  throw new ForkError(
    ForkErrorCode.BLOCK,
    `the upstream's block ${number} has the empty state root, yet its eth_getProof shows accounts: its header does not commit to its state (Anvil's genesis block is such a block); fork a later block (--fork-block ${number + 1n} or later, once the upstream has one)`,
  );
}

/**
 * A header of this chain's form with the upstream block's fields: the upstream's own header when
 * it is a Nodex node (its JSON block names every field), otherwise one whose hash differs from
 * the upstream's (another node's header has another form).
 */
function headerFromJson(block: unknown, network: NetworkPreset): BlockHeader {
  const get = (name: string) => field(block, name);
  const present = (name: string) => {
    const v = (block as Record<string, unknown>)[name];
    return v === undefined || v === null ? undefined : v;
  };
  const optionalQuantity = (name: string, fallback: bigint) => {
    const v = present(name);
    return v === undefined ? fallback : quantity(v, name);
  };
  const optionalBytes = (name: string) => {
    const v = present(name);
    return v === undefined ? new Uint8Array() : hexToBytes(bytes(v, name));
  };
  const uncles = present("uncles");
  return {
    parentHash: hexToBytes(data(get("parentHash"), "parentHash", 32)),
    unclesHash: hexToBytes(data(get("sha3Uncles"), "sha3Uncles", 32)),
    coinbase: hexToBytes(data(get("miner"), "miner", 20)) as BlockHeader["coinbase"],
    stateRoot: hexToBytes(data(get("stateRoot"), "stateRoot", 32)),
    transactionsRoot: hexToBytes(data(get("transactionsRoot"), "transactionsRoot", 32)),
    receiptsRoot: hexToBytes(data(get("receiptsRoot"), "receiptsRoot", 32)),
    logsBloom: hexToBytes(data(get("logsBloom"), "logsBloom", 256)),
    difficulty: optionalQuantity("difficulty", 1n),
    number: quantity(get("number"), "number"),
    gasLimit: quantity(get("gasLimit"), "gasLimit"),
    gasUsed: quantity(get("gasUsed"), "gasUsed"),
    timestamp: quantity(get("timestamp"), "timestamp"),
    extraData: optionalBytes("extraData"),
    paidFees: optionalQuantity("paidFees", 0n),
    minimumGasPrice: optionalQuantity("minimumGasPrice", network.genesis.minimumGasPrice),
    uncleCount: Array.isArray(uncles) ? uncles.length : 0,
    ummRoot: new Uint8Array(),
    bitcoinMergedMiningHeader: optionalBytes("bitcoinMergedMiningHeader"),
    bitcoinMergedMiningMerkleProof: optionalBytes("bitcoinMergedMiningMerkleProof"),
    bitcoinMergedMiningCoinbaseTransaction: optionalBytes("bitcoinMergedMiningCoinbaseTransaction"),
  };
}

/** Hex data of any length (at most 1 MB). */
function bytes(value: unknown, name: string): string {
  if (
    typeof value !== "string" ||
    value.length > 2 + 2 * 2 ** 20 ||
    !/^0x(?:[0-9a-fA-F]{2})*$/.test(value)
  )
    throw new ForkError(
      ForkErrorCode.HEADER,
      `the upstream's ${name} is not hex data: ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  return value;
}

function field(value: unknown, name: string): unknown {
  if (typeof value !== "object" || value === null)
    throw new ForkError(ForkErrorCode.HEADER, `the upstream's block is not an object`);
  const v = (value as Record<string, unknown>)[name];
  if (v === undefined || v === null)
    throw new ForkError(ForkErrorCode.HEADER, `the upstream's block has no ${name}`);
  return v;
}

function quantity(value: unknown, name: string): bigint {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(value))
    throw new ForkError(
      ForkErrorCode.HEADER,
      `the upstream's ${name} is not a quantity: ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  return BigInt(value);
}

function data(value: unknown, name: string, bytes: number): string {
  if (typeof value !== "string" || !new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`).test(value))
    throw new ForkError(
      ForkErrorCode.HEADER,
      `the upstream's ${name} is not ${bytes} bytes of hex: ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  return value.toLowerCase();
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

function readForkFile(datadir: string): ForkPoint | undefined {
  const path = join(datadir, FORK_FILE);
  if (!existsSync(path)) return undefined;
  let file: ForkFile;
  try {
    file = JSON.parse(readFileSync(path, "utf8")) as ForkFile;
    if (file.format !== "nodex-fork/1") throw new Error(`unknown format ${String(file.format)}`);
    const header = decodeHeader(hexToBytes(file.header));
    return {
      number: BigInt(file.number),
      hash: file.hash,
      header,
      exact: file.exact === true,
    };
  } catch (err) {
    throw new ForkError(
      ForkErrorCode.DATADIR,
      `${path} cannot be read (${(err as Error).message}): the datadir's fork point is lost; use another --datadir`,
    );
  }
}

async function writeForkFile(datadir: string, point: ForkPoint, urls: readonly string[]) {
  const file: ForkFile = {
    format: "nodex-fork/1",
    number: point.number.toString(),
    hash: point.hash,
    exact: point.exact,
    header: bytesToHex(encodeHeader(point.header)),
    upstreams: urls.map(redactUrl),
  };
  const path = join(datadir, FORK_FILE);
  await writeFile(`${path}.tmp`, `${JSON.stringify(file, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

/** The request budget of upstreams on this machine unless told: none to speak of. */
const LOCAL_RPS = 100_000;

/** The budget of requests a second to the upstreams: as given, else by where they are. */
function forkRps(fork: ForkConfig): number {
  if (fork.rps !== undefined) return fork.rps;
  return fork.urls.every(isLocalUrl) ? LOCAL_RPS : DEFAULT_FORK_RPS;
}

function isLocalUrl(text: string): boolean {
  const host = new URL(text).hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** A fork's upstream and its point, ready for the chain to open on. */
export interface OpenedFork {
  readonly upstream: Upstream;
  /** The `--fork-url`s, as given. */
  readonly urls: readonly string[];
  readonly point: ForkPoint;
  /** Writes the fork point to the datadir if it is new; call once the chain has opened on it. */
  keep(): Promise<void>;
  /** The chain's first block. */
  readonly anchor: ChainAnchor;
  /** The source of the upstream's state, on the node's database. */
  source(db: Database): ForkSource;
}

/**
 * The upstream client of `config.fork` and the fork point (the datadir's, or asked of the
 * upstream and written to the datadir).
 */
export async function openFork(config: NodeConfig, logger: Logger): Promise<OpenedFork> {
  const fork = config.fork;
  if (fork === undefined) throw new Error("openFork needs a fork config");
  const log = logger.child({ module: "fork" });
  // Refused before anything is asked or written: the state source takes only checked answers.
  if (!fork.verify)
    throw new ForkError(
      ForkErrorCode.UNSUPPORTED,
      "--fork-verify off (the upstream's state taken unchecked, for a node without eth_getProof) is not supported yet: fork a node that serves eth_getProof (Nodex, geth, Anvil, Hardhat's node)",
    );
  await mkdir(config.datadir, { recursive: true });
  const rps = forkRps(fork);
  // A second's worth of requests may go at once after a quiet spell: a script's first reads
  // are not spaced out when the upstream has been idle.
  const upstream = new Upstream({
    urls: [...fork.urls],
    rps,
    burst: rps,
    timeoutMs: fork.timeoutSeconds * 1000,
    logger: log,
  });
  try {
    const { point, kept } = await forkPoint(upstream, fork, config.network, config.datadir, log);
    log.info("Forking", {
      upstreams: upstream.describe(),
      block: point.number.toString(),
      verify: fork.verify ? "on" : "off",
      rps: fork.rps ?? (rps === LOCAL_RPS ? "none (upstreams on this machine)" : rps),
    });
    let written = kept;
    return {
      upstream,
      urls: fork.urls,
      point,
      async keep() {
        if (written) return;
        await keepForkPoint(config.datadir, point, fork.urls);
        written = true;
      },
      anchor: { header: point.header },
      source: (db) =>
        new ForkSource({
          upstream,
          db,
          blockTag: hex(point.number),
          stateRoot: point.header.stateRoot,
          verify: fork.verify,
        }),
    };
  } catch (err) {
    upstream.close();
    throw err;
  }
}

/** What the local chain knows, for `UpstreamHistory`. */
export interface LocalLookups {
  /** The local head's number. */
  head(): bigint;
  /** The number of the local block of this hash, `undefined` when there is none. */
  blockNumber(hash: string): Promise<bigint | undefined>;
  /** Whether the chain or the pool holds a transaction of this hash. */
  hasTransaction(hash: string): Promise<boolean>;
}

/** How many upstream answers a fork keeps in memory. */
const HISTORY_CACHE_ENTRIES = 4096;

/**
 * A fork's history (`ForkHistory` of `@nodex/rpc`): the upstream's answers about its blocks up
 * to the fork block, kept (they cannot change), and nothing of what it made after: a block or
 * transaction the upstream has past the fork block is not this chain's, and is answered as
 * unknown.
 */
export class UpstreamHistory implements ForkHistory {
  readonly forkBlock: bigint;
  readonly forkBlockHash: string | undefined;
  readonly upstreamUrls: readonly string[];
  readonly #upstream: Upstream;
  readonly #local: LocalLookups;
  readonly #db: Database;
  readonly #exact: boolean;
  readonly #cache = new Map<string, unknown>();

  /**
   * `db` keeps the answers (`FORK_HISTORY`): a restart gives them without the upstream.
   * `exact`: whether the local fork block has the upstream's hash (`ForkPoint.exact`). When it
   * has not, its own hash (the next block's parent hash) names the local header, which the
   * upstream does not know. `upstreamUrls`: the `--fork-url`s; `forkBlockHash`: the upstream's
   * hash of the fork block.
   */
  constructor(
    upstream: Upstream,
    forkBlock: bigint,
    local: LocalLookups,
    db: Database,
    exact = true,
    upstreamUrls: readonly string[] = [],
    forkBlockHash?: string,
  ) {
    this.#upstream = upstream;
    this.forkBlock = forkBlock;
    this.forkBlockHash = forkBlockHash;
    this.upstreamUrls = upstreamUrls;
    this.#local = local;
    this.#db = db;
    this.#exact = exact;
  }

  head(): bigint {
    return this.#local.head();
  }

  async isLocalBlock(hash: string): Promise<boolean> {
    const number = await this.#local.blockNumber(hash);
    if (number === undefined) return false;
    return number > this.forkBlock || (number === this.forkBlock && !this.#exact);
  }

  isLocalTransaction(hash: string): Promise<boolean> {
    return this.#local.hasTransaction(hash);
  }

  async forward(method: string, params: readonly unknown[]): Promise<unknown> {
    const key = `${method}:${JSON.stringify(params)}`;
    if (this.#cache.has(key)) return this.#cache.get(key);
    const dbKey = keccak256(new TextEncoder().encode(key));
    const kept = await this.#db.get(Bucket.FORK_HISTORY, dbKey);
    if (kept !== undefined) {
      const value = JSON.parse(new TextDecoder().decode(kept)) as unknown;
      this.#remember(key, value);
      return value;
    }
    let result: unknown;
    try {
      result = await this.#upstream.call(method, params);
    } catch (err) {
      // The upstream's refusal is the answer, with its code and message.
      if (err instanceof StateError && err.code === StateErrorCode.UPSTREAM_ERROR) {
        const { code, message, data } = err.meta as {
          code?: unknown;
          message?: unknown;
          data?: unknown;
        };
        throw new RPCError(
          typeof code === "number" ? code : -32000,
          typeof message === "string" ? message : err.message,
          typeof data === "string" ? data : undefined,
        );
      }
      throw err;
    }
    result = this.#beforeFork(result);
    this.#remember(key, result);
    // Kept when the database takes writes; an answer not kept is asked for again next time.
    await this.#db
      .write([
        {
          type: "put",
          bucket: Bucket.FORK_HISTORY,
          key: dbKey,
          value: new TextEncoder().encode(JSON.stringify(result ?? null)),
        },
      ])
      .catch(() => {});
    return result;
  }

  #remember(key: string, value: unknown): void {
    if (this.#cache.size >= HISTORY_CACHE_ENTRIES) this.#cache.clear();
    this.#cache.set(key, value);
  }

  /** `null` for a block, transaction or receipt the upstream made after the fork block. */
  #beforeFork(result: unknown): unknown {
    if (typeof result !== "object" || result === null || Array.isArray(result)) return result;
    const number = (result as { blockNumber?: unknown; number?: unknown }).blockNumber;
    const own = (result as { number?: unknown }).number;
    const at = typeof number === "string" ? number : typeof own === "string" ? own : undefined;
    if (at !== undefined && /^0x[0-9a-fA-F]+$/.test(at) && BigInt(at) > this.forkBlock) return null;
    return result;
  }
}
