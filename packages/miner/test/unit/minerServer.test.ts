import { ChainError, genesisHeader, mergedMiningRules, SYNTHETIC_SEALER } from "@nodex/chain";
import {
  buildSyntheticProof,
  doubleSha256,
  hashMeetsTarget,
  syntheticCoinbase,
  syntheticHeader,
  txid,
} from "@nodex/mergemining";
import { EMPTY_TRIE_ROOT } from "@nodex/state";
import {
  bytesToHex,
  deriveDevAccounts,
  nullLogger,
  type SignedTransaction,
  signTransaction,
} from "@nodex/types";
import { describe, expect, it } from "vitest";
import { MinerServer } from "../../src/index.js";
import { HASHRATE_REPORTERS_KEPT } from "../../src/minerServer.js";
import { chainFactory, MINER, network } from "./fixtures.js";

const [alice, bob] = deriveDevAccounts();
const makeChain = chainFactory();

async function setup(pending: SignedTransaction[] = []) {
  const chain = await makeChain({ rules: mergedMiningRules(network), sealer: SYNTHETIC_SEALER });
  const server = new MinerServer(chain, {
    coinbase: () => MINER,
    transactions: () => pending,
    logger: nullLogger,
  });
  return { chain, server };
}

/** Mines the work as a pool would: a Bitcoin block whose coinbase carries the tag. */
async function solve(server: MinerServer) {
  const work = await server.getWork();
  const proof = buildSyntheticProof({
    hashForMergedMining: work.blockHashForMergedMining,
    difficulty: 1n,
    time: Math.floor(Date.now() / 1000),
  });
  return { work, proof };
}

describe("MinerServer", () => {
  it("hands out work once with notify, then without, until the head moves", async () => {
    const { chain, server } = await setup();
    const first = await server.getWork();
    expect(first.notify).toBe(true);
    expect(bytesToHex(first.parentBlockHash)).toBe(bytesToHex(chain.head.hash));
    // Regtest difficulty 1 counts as 3: target floor(2^256 / 3).
    expect(bytesToHex(first.target)).toBe(`0x${"55".repeat(32)}`);
    expect(first.feesPaidToMiner).toBe(0n);
    const again = await server.getWork();
    expect(again.notify).toBe(false);
    expect(bytesToHex(again.blockHashForMergedMining)).toBe(
      bytesToHex(first.blockHashForMergedMining),
    );
    await chain.mine([], { coinbase: MINER });
    const next = await server.getWork();
    expect(next.notify).toBe(true);
    expect(bytesToHex(next.parentBlockHash)).toBe(bytesToHex(chain.head.hash));
  });

  it("takes a whole Bitcoin block, finds the block by the coinbase's tag and imports it", async () => {
    const pending = [
      signTransaction(
        {
          nonce: 0n,
          gasPrice: 2n,
          gasLimit: 21_000n,
          to: bob!.address,
          value: 9n,
          data: new Uint8Array(),
        },
        alice!.privateKey,
        33,
      ),
    ];
    const { chain, server } = await setup(pending);
    const { work, proof } = await solve(server);
    expect(work.feesPaidToMiner).toBe(42_000n);
    const res = await server.submitBitcoinBlock(proof.bitcoinBlock);
    expect(res.blockImportedResult).toBe("IMPORTED_BEST");
    expect(res.blockIncludedHeight).toBe(1n);
    expect(bytesToHex(chain.head.hash)).toBe(bytesToHex(res.blockHash));
    expect(chain.head.block.transactions).toHaveLength(1);
    expect(chain.head.block.header.bitcoinMergedMiningHeader).toEqual(proof.bitcoinHeader);
    // The same solution again: the block exists.
    expect((await server.submitBitcoinBlock(proof.bitcoinBlock)).blockImportedResult).toBe("EXIST");
  });

  it("takes the header, coinbase and txids, or the header, coinbase and Merkle branch", async () => {
    const { chain, server } = await setup();
    let { proof } = await solve(server);
    const display = txid(proof.coinbaseTransaction).slice().reverse();
    const byTxids = await server.submitBitcoinBlockTransactions(
      proof.bitcoinHeader,
      proof.coinbaseTransaction,
      [display],
    );
    expect(byTxids.blockImportedResult).toBe("IMPORTED_BEST");
    ({ proof } = await solve(server));
    const byBranch = await server.submitBitcoinBlockPartialMerkle(
      proof.bitcoinHeader,
      proof.coinbaseTransaction,
      [txid(proof.coinbaseTransaction)],
      1,
    );
    expect(byBranch.blockImportedResult).toBe("IMPORTED_BEST");
    expect(chain.head.block.header.number).toBe(2n);
  });

  it("refuses solutions that cannot become a block, and leaves the chain as it was", async () => {
    const { chain, server } = await setup();
    const { work, proof } = await solve(server);
    const reject = async (run: () => Promise<unknown>, message: string) => {
      const err = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ChainError);
      expect((err as ChainError).code).toBe("CHAIN_MINING_SUBMISSION");
      expect((err as Error).message).toContain(message);
    };
    // A tag for a block this node never handed out.
    const foreign = buildSyntheticProof({
      hashForMergedMining: new Uint8Array(32).fill(7),
      difficulty: 1n,
      time: 1,
    });
    await reject(
      () => server.submitBitcoinBlock(foreign.bitcoinBlock),
      `could not find hash 0x${"07".repeat(32)} in the cache`,
    );
    // Not enough work: a nonce whose header misses the target.
    const weak = proof.bitcoinHeader.slice();
    for (let nonce = 0; ; nonce++) {
      new DataView(weak.buffer).setUint32(76, nonce, true);
      if (!hashMeetsTarget(doubleSha256(weak), work.target)) break;
    }
    await reject(
      () =>
        server.submitBitcoinBlockTransactions(weak, proof.coinbaseTransaction, [
          txid(proof.coinbaseTransaction).slice().reverse(),
        ]),
      "Invalid block supplied by miner",
    );
    // Malformed input.
    await reject(() => server.submitBitcoinBlock(Uint8Array.of(1, 2, 3)), "invalid Bitcoin block");
    await reject(
      () =>
        server.submitBitcoinBlockPartialMerkle(
          proof.bitcoinHeader,
          proof.coinbaseTransaction,
          [],
          1,
        ),
      "The list of merkle hashes can't be empty",
    );
    await reject(
      () =>
        server.submitBitcoinBlockTransactions(proof.bitcoinHeader, proof.coinbaseTransaction, [
          new Uint8Array(32),
        ]),
      "the first transaction hash is not the coinbase's",
    );
    expect(chain.head.block.header.number).toBe(0n);
  });

  it("serves eth_getWork and takes eth_submitWork nonces (extra-nonce and header nonce)", async () => {
    const { chain, server } = await setup();
    const work = await server.getEthWork();
    const seed = new DataView(work.seedHash.buffer);
    expect(seed.getUint32(4)).toBe(0x2055_5555);
    // Grind as a miner would: the header of the synthetic block for extra-nonce 5.
    const coinbase = syntheticCoinbase(work.powHash, 5n);
    const time = seed.getUint32(0);
    let found = -1;
    let missed = -1;
    for (let n = 0; found < 0 || missed < 0; n++) {
      const header = syntheticHeader(coinbase, time, seed.getUint32(4), n);
      if (hashMeetsTarget(doubleSha256(header), work.boundary)) found = found < 0 ? n : found;
      else missed = missed < 0 ? n : missed;
    }
    const nonce = (n: number) => {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setUint32(0, 5);
      new DataView(out.buffer).setUint32(4, n);
      return out;
    };
    const mix = new Uint8Array(32);
    expect(await server.submitEthWork(nonce(missed), work.powHash, mix)).toBe(false);
    expect(await server.submitEthWork(nonce(found), new Uint8Array(32).fill(1), mix)).toBe(false);
    expect(await server.submitEthWork(nonce(found), work.powHash, mix)).toBe(true);
    expect(chain.head.block.header.number).toBe(1n);
    // Replayed: the block exists already.
    expect(await server.submitEthWork(nonce(found), work.powHash, mix)).toBe(false);
  });

  it("keeps the hashrate reports of at most 10,000 miners, and only of the last minute", async () => {
    let now = 1_000_000;
    const chain = await makeChain({ rules: mergedMiningRules(network), sealer: SYNTHETIC_SEALER });
    const server = new MinerServer(chain, {
      coinbase: () => MINER,
      transactions: () => [],
      logger: nullLogger,
      now: () => now,
    });
    const id = (i: number) => {
      const bytes = new Uint8Array(32);
      new DataView(bytes.buffer).setUint32(28, i);
      return bytes;
    };
    for (let i = 0; i < HASHRATE_REPORTERS_KEPT + 500; i++) server.submitHashrate(1n, id(i));
    expect(server.reportedHashrate()).toBe(BigInt(HASHRATE_REPORTERS_KEPT));
    // A miner reporting again replaces its report.
    server.submitHashrate(5n, id(HASHRATE_REPORTERS_KEPT + 499));
    expect(server.reportedHashrate()).toBe(BigInt(HASHRATE_REPORTERS_KEPT) + 4n);
    now += 61_000;
    server.submitHashrate(7n, id(0));
    expect(server.reportedHashrate()).toBe(7n);
  });
});

describe("MinerServer.netHashrate", () => {
  it("leaves out a genesis with timestamp 0: the span runs from the oldest mined block", async () => {
    const { chain, server } = await setup();
    expect(chain.head.block.header.timestamp).toBe(0n);
    const start = 1_700_000_000n;
    const mined = [];
    for (let i = 0n; i < 13n; i++) {
      mined.push(await chain.mine([], { coinbase: MINER, timestamp: start + 2n * i }));
    }
    // Work after the first mined block, over the 24 s from it to the head.
    const work = mined.slice(1).reduce((sum, b) => sum + b.block.header.difficulty, 0n);
    expect(work).toBeGreaterThan(0n);
    expect(await server.netHashrate()).toBe(work / 24n);
    // Within a window that starts after the genesis, the block before it opens the span.
    const window = mined.slice(-4).reduce((sum, b) => sum + b.block.header.difficulty, 0n);
    expect(await server.netHashrate(4n)).toBe(window / 8n);
  });

  it("leaves out the anchor of an anchored chain: it was mined elsewhere", async () => {
    const start = 1_700_000_000n;
    const anchor = {
      ...genesisHeader(network, EMPTY_TRIE_ROOT),
      number: 1_000_000n,
      parentHash: new Uint8Array(32).fill(7),
      timestamp: start - 1_000n,
      difficulty: 5_000n,
    };
    const chain = await makeChain({
      rules: mergedMiningRules(network),
      sealer: SYNTHETIC_SEALER,
      anchor: { header: anchor },
    });
    const server = new MinerServer(chain, {
      coinbase: () => MINER,
      transactions: () => [],
      logger: nullLogger,
    });
    expect(await server.netHashrate()).toBe(0n);
    const mined = [];
    for (let i = 0n; i < 13n; i++) {
      mined.push(await chain.mine([], { coinbase: MINER, timestamp: start + 2n * i }));
    }
    expect(mined[0]!.block.header.number).toBe(1_000_001n);
    const work = mined.slice(1).reduce((sum, b) => sum + b.block.header.difficulty, 0n);
    expect(await server.netHashrate()).toBe(work / 24n);
    const window = mined.slice(-4).reduce((sum, b) => sum + b.block.header.difficulty, 0n);
    expect(await server.netHashrate(4n)).toBe(window / 8n);
  });

  it("answers 0 with nothing mined, and with one block after a genesis at time 0", async () => {
    const { chain, server } = await setup();
    expect(await server.netHashrate()).toBe(0n);
    await chain.mine([], { coinbase: MINER, timestamp: 1_700_000_000n });
    expect(await server.netHashrate()).toBe(0n);
  });
});
