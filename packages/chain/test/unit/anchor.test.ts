import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bucket, Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  type BlockHeader,
  type BlockSelector,
  BlockTag,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  headerHash,
  keccak256,
  NETWORKS,
  type NetworkPreset,
  nullLogger,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import {
  Chain,
  type ChainAnchor,
  type ChainDeps,
  ChainError,
  ChainErrorCode,
  ChainReader,
  genesisHeader,
  mergedMiningRules,
  SYNTHETIC_SEALER,
} from "../../src/index.js";
import { executor, MINER } from "./fixtures.js";

const network = NETWORKS.regtest;
const [alice, bob, carol] = deriveDevAccounts();
const N = 1_000_000n;
/** What the upstream's state gives the accounts this chain's blocks spend from. */
const FUNDS = 5n * 10n ** 18n;
/** The anchor's time: the blocks after it are made at later times. */
const ANCHOR_TIME = 1_700_000_000n;

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A new database in a temp folder, and how to open it again once closed. */
async function newDatabase(): Promise<{ db: Database; reopen: () => Promise<Database> }> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-anchor-test-"));
  dirs.push(dir);
  const path = join(dir, "db");
  const db = await Database.open(path);
  dbs.push(db);
  return {
    db,
    reopen: async () => {
      const again = await Database.open(path);
      dbs.push(again);
      return again;
    },
  };
}

/**
 * The upstream's state at the fork, written into `db` as the fork source would fill it in:
 * alice and bob funded (carol not). Its root.
 */
async function writeUpstreamState(db: Database): Promise<Uint8Array> {
  const store = new NodeStore(db);
  const state = await WorldState.open(store);
  await state.setBalance(alice!.address, FUNDS);
  await state.setBalance(bob!.address, FUNDS);
  const root = await state.commit();
  await db.write(store.takeWrites([root]));
  store.confirmWrites();
  return root;
}

/** An upstream header at `number` with state root `stateRoot`, as a fork source would give it. */
function upstreamHeader(number: bigint, stateRoot: Uint8Array, tag = "upstream"): BlockHeader {
  return {
    ...genesisHeader(network, stateRoot),
    number,
    parentHash:
      number === 0n ? new Uint8Array(32) : keccak256(new TextEncoder().encode(`${tag} ${number}`)),
    timestamp: ANCHOR_TIME,
    gasLimit: 8_000_000n,
    difficulty: 1_000n,
    minimumGasPrice: 60_000_000n,
    extraData: new TextEncoder().encode(tag),
  };
}

const openChain = (
  db: Database,
  anchor?: ChainAnchor,
  deps: Partial<ChainDeps> = {},
  preset: NetworkPreset = network,
) =>
  Chain.open(preset, {
    db,
    executor,
    logger: nullLogger,
    ...(anchor === undefined ? {} : { anchor }),
    ...deps,
  });

const sign = (from: typeof alice, fields: Partial<UnsignedTransaction> & { nonce: bigint }) =>
  signTransaction(
    {
      gasPrice: 60_000_000n,
      gasLimit: 100_000n,
      to: null,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    from!.privateKey,
    33,
  );

const TOPIC = keccak256(new TextEncoder().encode("Ping()")) as Hash32;
/** Runtime that emits LOG1(Ping()) with the word 7 as data. */
const LOGGING_RUNTIME = new Uint8Array([
  ...[0x60, 0x07, 0x60, 0x00, 0x52], // mstore(0, 7)
  0x7f,
  ...TOPIC, // push32 topic
  ...[0x60, 0x20, 0x60, 0x00, 0xa1], // log1(0, 32, topic)
  0x00, // stop
]);
/** Init code that returns `runtime` as the contract's code. */
function deployCode(runtime: Uint8Array): Uint8Array {
  const n = runtime.length;
  return new Uint8Array([
    ...[0x61, n >> 8, n & 0xff, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
    ...runtime,
  ]);
}
const EMITTER = contractAddress(alice!.address, 0n);

const byNumber = (number: bigint): BlockSelector => ({ kind: "number", number });
const byTag = (tag: BlockTag): BlockSelector => ({ kind: "tag", tag });

/**
 * Twenty blocks on the anchor: N+1 deploys the emitter (alice), each of N+2 to N+20 has bob pay
 * carol 1 and alice call the emitter (one log each).
 */
async function twentyBlocks(chain: Chain): Promise<void> {
  const deploy = sign(alice, { nonce: 0n, data: deployCode(LOGGING_RUNTIME), gasLimit: 200_000n });
  await chain.mine([deploy], { coinbase: MINER, timestamp: ANCHOR_TIME + 10n });
  for (let i = 0n; i < 19n; i++) {
    const pay = sign(bob, { nonce: i, to: carol!.address, value: 1n, gasLimit: 21_000n });
    const ping = sign(alice, { nonce: 1n + i, to: EMITTER });
    const mined = await chain.mine([pay, ping], {
      coinbase: MINER,
      timestamp: ANCHOR_TIME + 11n + i,
    });
    expect(mined.included).toHaveLength(2);
  }
}

async function expectChainError(
  promise: Promise<unknown>,
  code: ChainErrorCode,
  message: RegExp,
): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChainError);
  expect((err as ChainError).code).toBe(code);
  expect((err as ChainError).message).toMatch(message);
}

describe("a chain anchored at an upstream block", () => {
  it("starts at the anchor, writing none of its state", async () => {
    const { db } = await newDatabase();
    // A root whose nodes are nowhere: the fork source would provide them later.
    const header = upstreamHeader(N, keccak256(new TextEncoder().encode("absent root")));
    const chain = await openChain(db, { header, totalDifficulty: 123_456_789n });
    const hash = headerHash(header);
    expect(chain.firstBlock).toEqual({
      number: N,
      hash,
      anchored: true,
      snapshot: false,
      headersFrom: N,
    });
    expect(chain.head.hash).toEqual(hash);
    expect(chain.head.totalDifficulty).toBe(123_456_789n);
    expect(chain.head.block.header).toEqual(header);
    expect(chain.head.block.transactions).toEqual([]);
    expect((await chain.getBlockByNumber(N))?.hash).toEqual(hash);
    expect(await chain.getBlockByNumber(N - 1n)).toBeUndefined();
    expect(await chain.getBlockByNumber(0n)).toBeUndefined();
    expect(await chain.getReceipts(hash)).toEqual([]);
    let trieNodes = 0;
    for await (const _ of db.keys(Bucket.TRIE)) trieNodes++;
    expect(trieNodes).toBe(0);
    await expectChainError(
      chain.stateAt(header),
      ChainErrorCode.STATE_MISSING,
      /state of block 1000000 is not available/,
    );
  });

  it("opens again without its state, at the same anchor", async () => {
    const { db, reopen } = await newDatabase();
    const header = upstreamHeader(N, keccak256(new TextEncoder().encode("absent root")));
    await openChain(db, { header });
    await db.close();
    const again = await openChain(await reopen(), { header });
    expect(again.head.hash).toEqual(headerHash(header));
    expect(again.head.totalDifficulty).toBe(header.difficulty);
    expect(again.firstBlock.number).toBe(N);
  });

  it("makes blocks N+1 to N+20 on the upstream's state, with merged-mining proofs", async () => {
    const { db } = await newDatabase();
    const root = await writeUpstreamState(db);
    const anchor = upstreamHeader(N, root);
    const rules = mergedMiningRules(network);
    const chain = await openChain(db, { header: anchor }, { rules, sealer: SYNTHETIC_SEALER });
    await twentyBlocks(chain);
    expect(chain.head.block.header.number).toBe(N + 20n);
    let parent = (await chain.getBlockByNumber(N))!;
    for (let n = N + 1n; n <= N + 20n; n++) {
      const block = (await chain.getBlockByNumber(n))!;
      const { header } = block.block;
      expect(header.parentHash).toEqual(parent.hash);
      expect(header.timestamp).toBeGreaterThan(parent.block.header.timestamp);
      expect(header.gasLimit).toBe(anchor.gasLimit);
      expect(header.difficulty).toBe(
        rules.difficulty(parent.block.header, header.timestamp, header.uncleCount),
      );
      expect(header.bitcoinMergedMiningHeader).toHaveLength(80);
      // The proof commits to the block, fork-detection data included.
      expect(rules.checkSeal(header, await chain.hashForMergedMining(header))).toBeUndefined();
      expect(block.totalDifficulty).toBe(parent.totalDifficulty + header.difficulty);
      parent = block;
    }
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(carol!.address)).toBe(19n);
    expect(await state.getNonce(alice!.address)).toBe(20n);
    expect(await state.getCode(EMITTER)).toEqual(LOGGING_RUNTIME);
    // BLOCKHASH of the block before the anchor is in the anchor's header; older ones unknown.
    const hashes = chain.ancestorHashes(chain.head.block.header);
    expect(await hashes(N - 1n)).toEqual(anchor.parentHash);
    expect(await hashes(N - 2n)).toBeUndefined();
    expect(await hashes(N)).toEqual(headerHash(anchor));
  });

  it("reads blocks and logs from the anchor on, and tells older numbers apart", async () => {
    const { db } = await newDatabase();
    const anchor = upstreamHeader(N, await writeUpstreamState(db));
    const deep = { ...network, safeDepth: 5n, finalizedDepth: 50n };
    const chain = await openChain(db, { header: anchor }, {}, deep);
    await twentyBlocks(chain);
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      // Every range with a constraint reads the log index.
      logIndexMinRange: 1n,
    });
    expect(reader.firstNumber).toBe(N);
    expect(reader.isBeforeFirst(N - 1n)).toBe(true);
    expect(reader.isBeforeFirst(N)).toBe(false);
    expect(await reader.resolve(byNumber(N - 1n))).toBeNull();
    expect(await reader.resolve(byNumber(N + 21n))).toBeNull();
    expect(reader.isBeforeFirst(N + 21n)).toBe(false);
    expect((await reader.resolve(byTag(BlockTag.EARLIEST)))?.hash).toEqual(headerHash(anchor));
    // Finalized is deeper than the chain: the first block.
    expect((await reader.resolve(byTag(BlockTag.FINALIZED)))?.block.header.number).toBe(N);
    expect((await reader.resolve(byTag(BlockTag.SAFE)))?.block.header.number).toBe(N + 15n);
    const n5 = (await reader.resolve(byNumber(N + 5n)))!;
    expect((await reader.blockByHash(n5.hash))?.block.header.number).toBe(N + 5n);

    const logs = async (from: BlockSelector, to: BlockSelector, addresses: Address[] = []) =>
      (await reader.getLogs({ range: { from, to }, addresses, topics: [] })).map(
        (l) => l.blockNumber,
      );
    const all = Array.from({ length: 19 }, (_, i) => N + 2n + BigInt(i));
    expect(await logs(byNumber(0n), byTag(BlockTag.LATEST))).toEqual(all);
    expect(await logs(byTag(BlockTag.EARLIEST), byTag(BlockTag.LATEST))).toEqual(all);
    expect(await logs(byNumber(N - 50n), byNumber(N + 4n))).toEqual([N + 2n, N + 3n, N + 4n]);
    expect(await logs(byNumber(N - 50n), byNumber(N + 4n), [EMITTER])).toEqual([
      N + 2n,
      N + 3n,
      N + 4n,
    ]);
    expect(await logs(byNumber(0n), byNumber(N + 20n), [EMITTER])).toEqual(all);
    expect(await logs(byNumber(N - 50n), byNumber(N - 1n))).toEqual([]);
    expect(await logs(byNumber(N), byNumber(N))).toEqual([]);
    const found = await reader.getLogs({
      range: { from: byNumber(N - 3n), to: byNumber(N + 2n) },
      addresses: [],
      topics: [[TOPIC]],
    });
    expect(found).toHaveLength(1);
    expect(found[0]!.log.address).toEqual(EMITTER);

    // The anchor has no transactions: no receipts, nothing to trace.
    const first = (await reader.resolve(byNumber(N)))!;
    expect(await reader.blockReceipts(first)).toEqual([]);
    expect(await reader.traceBlock(first, () => ({}) as never)).toEqual([]);
    expect(await reader.bitcoinBestChainHeight()).toBe(0n);
  });

  it("reorganizes down to the anchor and no further", async () => {
    const a = await newDatabase();
    const b = await newDatabase();
    const anchor = upstreamHeader(N, await writeUpstreamState(a.db));
    expect(await writeUpstreamState(b.db)).toEqual(anchor.stateRoot);
    const chain = await openChain(a.db, { header: anchor });
    const other = await openChain(b.db, { header: anchor });
    for (let i = 0n; i < 3n; i++) {
      const pay = sign(bob, { nonce: i, to: carol!.address, value: 1n, gasLimit: 21_000n });
      await chain.mine([pay], { coinbase: MINER, timestamp: ANCHOR_TIME + 1n + i });
    }
    const branch = [];
    for (let i = 0n; i < 4n; i++) {
      const pay = sign(alice, { nonce: i, to: carol!.address, value: 10n, gasLimit: 21_000n });
      branch.push(await other.mine([pay], { coinbase: MINER, timestamp: ANCHOR_TIME + 5n + i }));
    }
    const changes: { removed: bigint[]; added: bigint[] }[] = [];
    chain.onHeadChange(({ removed, added }) =>
      changes.push({
        removed: removed.map((x) => x.block.header.number),
        added: added.map((x) => x.block.header.number),
      }),
    );
    for (const [i, mined] of branch.entries()) {
      const res = await chain.importBlock(mined.block);
      expect(res.result).toBe(i < 3 ? "IMPORTED_NOT_BEST" : "IMPORTED_BEST");
    }
    expect(changes).toEqual([
      { removed: [N + 1n, N + 2n, N + 3n], added: [N + 1n, N + 2n, N + 3n, N + 4n] },
    ]);
    expect(chain.head.hash).toEqual(branch[3]!.hash);
    expect((await chain.getBlockByNumber(N))?.hash).toEqual(headerHash(anchor));
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(carol!.address)).toBe(40n);
    // A block on the upstream block before the anchor has no parent here.
    const below = { ...branch[0]!.block, header: { ...branch[0]!.block.header, number: N } };
    below.header.parentHash = anchor.parentHash;
    expect((await chain.importBlock(below)).result).toBe("NO_PARENT");
  });

  it("rewinds to the anchor, and refuses to go below it", async () => {
    const { db } = await newDatabase();
    const anchor = upstreamHeader(N, await writeUpstreamState(db));
    const chain = await openChain(db, { header: anchor });
    await twentyBlocks(chain);
    await chain.rewindTo(N + 2n);
    expect(chain.head.block.header.number).toBe(N + 2n);
    await chain.rewindTo(N);
    expect(chain.head.hash).toEqual(headerHash(anchor));
    expect(await chain.getBlockByNumber(N + 1n)).toBeUndefined();
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(carol!.address)).toBe(0n);
    expect(await state.getBalance(alice!.address)).toBe(FUNDS);
    await expectChainError(
      chain.rewindTo(N - 1n),
      ChainErrorCode.NOT_FOUND,
      /^block 999999 is before the chain's first block 1000000 \(its anchor\)/,
    );
    await expectChainError(chain.rewindTo(0n), ChainErrorCode.NOT_FOUND, /before the chain's/);
    expect(chain.head.hash).toEqual(headerHash(anchor));
    // Blocks are made on the anchor again.
    const pay = sign(bob, { nonce: 0n, to: carol!.address, value: 2n, gasLimit: 21_000n });
    const mined = await chain.mine([pay], { coinbase: MINER, timestamp: ANCHOR_TIME + 1n });
    expect(mined.block.header.number).toBe(N + 1n);
  });

  it("keeps the anchor's state when the state window moves past it", async () => {
    const { db } = await newDatabase();
    const anchor = upstreamHeader(N, await writeUpstreamState(db));
    const chain = await openChain(db, { header: anchor }, { stateWindow: 4 });
    await twentyBlocks(chain);
    // Pruning ran (every 4 blocks): an old block's state is gone, the anchor's is not.
    await expectChainError(
      chain.stateAt((await chain.getBlockByNumber(N + 5n))!.block.header),
      ChainErrorCode.STATE_MISSING,
      /pruned/,
    );
    await chain.rewindTo(N);
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(bob!.address)).toBe(FUNDS);
  });

  it("refuses a datadir whose chain starts elsewhere", async () => {
    const anchored = await newDatabase();
    const root = await writeUpstreamState(anchored.db);
    const anchor = upstreamHeader(N, root);
    await openChain(anchored.db, { header: anchor });
    await anchored.db.close();
    const db = await anchored.reopen();
    const hash = bytesToHex(headerHash(anchor));
    await expectChainError(
      openChain(db, { header: upstreamHeader(N, root, "another upstream") }),
      ChainErrorCode.OTHER_CHAIN,
      new RegExp(
        `^the datadir holds a chain anchored at block 1000000 ${hash}, not one anchored at block 1000000 0x[0-9a-f]{64}: another fork point`,
      ),
    );
    await expectChainError(
      openChain(db, { header: upstreamHeader(N + 1n, root) }),
      ChainErrorCode.OTHER_CHAIN,
      /not one anchored at block 1000001 .*: another fork point/,
    );
    await expectChainError(
      openChain(db),
      ChainErrorCode.OTHER_CHAIN,
      new RegExp(
        `^the datadir holds a chain anchored at block 1000000 ${hash}, not this network's genesis chain`,
      ),
    );
    // The same anchor still opens it, for reads too.
    expect((await openChain(db, { header: anchor })).firstBlock.hash).toEqual(headerHash(anchor));
    const follower = await Chain.openReadOnly(network, { db, executor, logger: nullLogger });
    expect(follower.firstBlock).toEqual({
      number: N,
      hash: headerHash(anchor),
      anchored: true,
      snapshot: false,
      headersFrom: N,
    });

    const genesis = await newDatabase();
    await openChain(genesis.db);
    await expectChainError(
      openChain(genesis.db, { header: anchor }),
      ChainErrorCode.OTHER_CHAIN,
      /^the datadir holds a chain that starts at genesis, not one anchored at block 1000000 .*: another chain/,
    );
  });

  it("refuses an anchor that cannot start a chain", async () => {
    const { db } = await newDatabase();
    const root = await writeUpstreamState(db);
    await expectChainError(
      openChain(db, { header: { ...upstreamHeader(N, root), stateRoot: new Uint8Array(31) } }),
      ChainErrorCode.INVALID_BLOCK,
      /^the anchor block is not usable: state root has 31 bytes, not 32$/,
    );
    await expectChainError(
      openChain(db, { header: upstreamHeader(2n ** 32n, root) }),
      ChainErrorCode.INVALID_BLOCK,
      /number 4294967296 is not within 0 to 4294967294/,
    );
    await expectChainError(
      openChain(db, { header: upstreamHeader(N, root), totalDifficulty: 1n }),
      ChainErrorCode.INVALID_BLOCK,
      /total difficulty 1 is below its difficulty 1000/,
    );
    // Nothing was written: the database is still new.
    const chain = await openChain(db);
    expect(chain.firstBlock).toMatchObject({ number: 0n, anchored: false });
  });

  it("anchored at block 0, behaves as a chain from genesis does", async () => {
    const { db } = await newDatabase();
    const anchor = upstreamHeader(0n, await writeUpstreamState(db));
    const chain = await openChain(db, { header: anchor });
    expect(chain.firstBlock).toEqual({
      number: 0n,
      hash: headerHash(anchor),
      anchored: true,
      snapshot: false,
      headersFrom: 0n,
    });
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    expect(reader.firstNumber).toBe(0n);
    await twentyBlocks(chain);
    expect(chain.head.block.header.number).toBe(20n);
    expect((await reader.resolve(byTag(BlockTag.EARLIEST)))?.hash).toEqual(headerHash(anchor));
    const found = await reader.getLogs({
      range: { from: byTag(BlockTag.EARLIEST), to: byTag(BlockTag.LATEST) },
      addresses: [],
      topics: [],
    });
    expect(found.map((l) => l.blockNumber)).toEqual(
      Array.from({ length: 19 }, (_, i) => 2n + BigInt(i)),
    );
    expect(await chain.ancestorHashes(chain.head.block.header)(0n)).toEqual(headerHash(anchor));
    await chain.rewindTo(0n);
    expect(chain.head.hash).toEqual(headerHash(anchor));
    await expectChainError(chain.rewindTo(-1n), ChainErrorCode.NOT_FOUND, /before the chain's/);
  });
});

describe("a chain from genesis", () => {
  it("starts at block 0, not anchored", async () => {
    const { db } = await newDatabase();
    const chain = await openChain(db);
    expect(chain.firstBlock).toEqual({
      number: 0n,
      hash: chain.head.hash,
      anchored: false,
      snapshot: false,
      headersFrom: 0n,
    });
    await expectChainError(
      chain.rewindTo(-1n),
      ChainErrorCode.NOT_FOUND,
      /^block -1 is before the chain's first block 0: /,
    );
  });
});
