import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeBitcoinHeader, hashToDisplayHex } from "../../src/bitcoinHeader.js";
import { coinbaseWithoutWitness, parseBitcoinBlock } from "../../src/block.js";
import {
  compressCoinbase,
  compressCoinbaseAt,
  compressedCoinbaseTxid,
  extractTaggedHash,
  RSK_TAG,
} from "../../src/coinbase.js";
import { doubleSha256, hashPair } from "../../src/doubleSha256.js";
import { grindNonce } from "../../src/grind.js";
import { coinbaseBranch, merkleRoot } from "../../src/merkle.js";
import {
  buildMerkleProof,
  checkTimestampLink,
  isValid64ByteTransaction,
  type MergedMiningProofInput,
  merkleProofFromBranch,
  ProofFailure,
  verifyMergedMiningProof,
} from "../../src/proof.js";
import { syntheticCoinbase } from "../../src/synthetic.js";
import { compactToTarget, difficultyToTarget, targetToBytes } from "../../src/target.js";
import { rskBlock0x1b4, testnetBlock926485, toHex } from "./vectors.js";

const concat = (...p: Uint8Array[]) => Uint8Array.from(p.flatMap((x) => [...x]));
const reverse = (b: Uint8Array) => Uint8Array.from(b).reverse();

/** A header committing to `root`, ground until it meets `difficulty`. */
function minedHeader(root: Uint8Array, difficulty: bigint, time = 1_700_000_000): Uint8Array {
  const header = encodeBitcoinHeader({
    version: 0x20000000,
    prevHash: new Uint8Array(32),
    merkleRoot: root,
    time,
    bits: 0x207fffff,
    nonce: 0,
  });
  const nonce = grindNonce(header, targetToBytes(difficultyToTarget(difficulty)), 0, 2 ** 32);
  new DataView(header.buffer).setUint32(76, nonce, true);
  return header;
}

/** A proof for a coinbase (full, no witness) and other txids, mined at `difficulty`. */
function proofFor(
  hashForMergedMining: Uint8Array,
  coinbase: Uint8Array,
  compressed: Uint8Array,
  others: Uint8Array[] = [],
  difficulty = 3n,
): MergedMiningProofInput {
  const txids = [doubleSha256(coinbase), ...others];
  return {
    hashForMergedMining,
    difficulty,
    bitcoinHeader: minedHeader(merkleRoot(txids), difficulty),
    coinbase: compressed,
    merkleProof: buildMerkleProof(txids),
  };
}

function reasonOf(input: MergedMiningProofInput): string {
  const r = verifyMergedMiningProof(input);
  return r.ok ? "ok" : r.reason;
}

describe("real proofs", () => {
  it("the reference's block 0x1b4 (rskj doc/rpc example): valid with its hashForMergedMining and difficulty", () => {
    const b = rskBlock0x1b4();
    const r = verifyMergedMiningProof(b);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(hashToDisplayHex(r.bitcoinHash)).toBe(
        "00000007dbceef87c7f0302810dd995fbb67f1bd395dc14081a75d23a36d7e83",
      );
    }
    expect(b.merkleProof).toHaveLength(7 * 32);
    expect(
      checkTimestampLink({
        bitcoinHeader: b.bitcoinHeader,
        timestamp: b.timestamp,
        limitSeconds: 300,
      }),
    ).toEqual({ ok: true });
  });

  it("block 0x1b4: every single-bit flip of header, coinbase or proof is rejected (exhaustive)", () => {
    const b = rskBlock0x1b4();
    const seen = new Set<string>();
    for (const field of ["bitcoinHeader", "coinbase", "merkleProof"] as const) {
      const bytes = b[field];
      for (let bit = 0; bit < bytes.length * 8; bit++) {
        const flipped = Uint8Array.from(bytes);
        flipped[bit >> 3]! ^= 1 << (bit & 7);
        const r = verifyMergedMiningProof({ ...b, [field]: flipped });
        expect(r.ok, `${field} bit ${bit}`).toBe(false);
        if (!r.ok) seen.add(`${field}:${r.reason}`);
      }
    }
    // Any header change fails proof of work first (difficulty 0x1aa2b738: ~2^-28.7 to pass).
    expect([...seen].sort()).toEqual([
      "bitcoinHeader:POW_ABOVE_TARGET",
      "coinbase:COINBASE_MALFORMED",
      "coinbase:MERKLE_ROOT_MISMATCH",
      "coinbase:TAG_HASH_MISMATCH",
      "coinbase:TAG_MISSING",
      "merkleProof:MERKLE_ROOT_MISMATCH",
    ]);
  });

  it("testnet 926485 (Bitcoin Core data): a real RSKBLOCK tag; compressed coinbase and proof from its txids verify", () => {
    const block = parseBitcoinBlock(testnetBlock926485().block);
    const cb = coinbaseWithoutWitness(block);
    const hashForMergedMining = extractTaggedHash(cb)!;
    const coinbase = compressCoinbase(cb);
    const merkleProof = buildMerkleProof(block.txids);
    expect(merkleProof).toHaveLength(3 * 32);
    // The difficulty whose target is at least the block's own nBits target.
    const difficulty = (1n << 256n) / compactToTarget(block.header.bits).target;
    const input = {
      hashForMergedMining,
      difficulty,
      bitcoinHeader: block.headerBytes,
      coinbase,
      merkleProof,
    };
    expect(verifyMergedMiningProof(input).ok).toBe(true);
    // The same proof from the branch as mnr_submitBitcoinBlockPartialMerkle receives it.
    const branch = [block.txids[0]!, ...coinbaseBranch(block.txids)];
    expect(toHex(merkleProofFromBranch(branch))).toBe(toHex(merkleProof));
    // Ten times the difficulty is too much for this header.
    expect(reasonOf({ ...input, difficulty: difficulty * 10n })).toBe(
      ProofFailure.POW_ABOVE_TARGET,
    );
    // Another RSK block's hash is not in this coinbase.
    expect(reasonOf({ ...input, hashForMergedMining: new Uint8Array(32) })).toBe(
      ProofFailure.TAG_HASH_MISMATCH,
    );
  });
});

describe("each failure reason, crafted", () => {
  const hfm = doubleSha256(new TextEncoder().encode("a block"));
  const cb = syntheticCoinbase(hfm, 7n);
  const good = proofFor(hfm, cb, compressCoinbase(cb), [new Uint8Array(32).fill(9)]);

  it("the crafted base case is valid", () => {
    expect(reasonOf(good)).toBe("ok");
  });

  it("HEADER_LENGTH", () => {
    expect(reasonOf({ ...good, bitcoinHeader: good.bitcoinHeader.subarray(0, 79) })).toBe(
      ProofFailure.HEADER_LENGTH,
    );
    expect(reasonOf({ ...good, bitcoinHeader: concat(good.bitcoinHeader, Uint8Array.of(0)) })).toBe(
      ProofFailure.HEADER_LENGTH,
    );
  });

  it("PROOF_LENGTH and PROOF_TOO_LONG (30 levels pass the length check, 31 do not)", () => {
    expect(reasonOf({ ...good, merkleProof: new Uint8Array(33) })).toBe(ProofFailure.PROOF_LENGTH);
    expect(reasonOf({ ...good, merkleProof: new Uint8Array(992) })).toBe(
      ProofFailure.PROOF_TOO_LONG,
    );
    expect(reasonOf({ ...good, merkleProof: new Uint8Array(960).fill(0xee) })).toBe(
      ProofFailure.MERKLE_ROOT_MISMATCH,
    );
  });

  it("POW_ABOVE_TARGET", () => {
    expect(reasonOf({ ...good, difficulty: 1n << 200n })).toBe(ProofFailure.POW_ABOVE_TARGET);
  });

  it("COINBASE_MALFORMED: shorter than count + midstate, or a count that is not whole blocks", () => {
    expect(reasonOf({ ...good, coinbase: good.coinbase.subarray(0, 39) })).toBe(
      ProofFailure.COINBASE_MALFORMED,
    );
    const odd = Uint8Array.from(good.coinbase);
    odd[7] = 65;
    expect(reasonOf({ ...good, coinbase: odd })).toBe(ProofFailure.COINBASE_MALFORMED);
    // A count of 2^61 + n would wrap the SHA-256 bit length back to n's: not a real coinbase.
    for (const top of [0x20, 0x40, 0x80]) {
      const wrapped = Uint8Array.from(good.coinbase);
      wrapped[0]! |= top;
      expect(reasonOf({ ...good, coinbase: wrapped })).toBe(ProofFailure.COINBASE_MALFORMED);
    }
  });

  it("TAG_MISSING", () => {
    const noTag = compressCoinbaseAt(new Uint8Array(120).fill(5), 64);
    expect(reasonOf(proofFor(hfm, new Uint8Array(120).fill(5), noTag))).toBe(
      ProofFailure.TAG_MISSING,
    );
    // A tag hashed into the midstate does not count.
    const hidden = concat(RSK_TAG, hfm, new Uint8Array(100));
    expect(reasonOf(proofFor(hfm, hidden, compressCoinbaseAt(hidden, 64)))).toBe(
      ProofFailure.TAG_MISSING,
    );
  });

  it("TAG_HASH_MISMATCH: the coinbase commits to another block", () => {
    expect(reasonOf({ ...good, hashForMergedMining: reverse(hfm) })).toBe(
      ProofFailure.TAG_HASH_MISMATCH,
    );
  });

  it("TAG_TOO_FAR: the tag starts at tail offset 64", () => {
    const far = concat(new Uint8Array(64), RSK_TAG, hfm, new Uint8Array(8));
    expect(reasonOf(proofFor(hfm, far, compressCoinbaseAt(far, 0)))).toBe(ProofFailure.TAG_TOO_FAR);
    const near = concat(new Uint8Array(63), RSK_TAG, hfm, new Uint8Array(8));
    expect(reasonOf(proofFor(hfm, near, compressCoinbaseAt(near, 0)))).toBe("ok");
  });

  it("TAG_NOT_LAST: another RSKBLOCK: after the one with this block's hash", () => {
    const two = concat(new Uint8Array(30), RSK_TAG, hfm, RSK_TAG, new Uint8Array(40));
    expect(reasonOf(proofFor(hfm, two, compressCoinbaseAt(two, 0)))).toBe(
      ProofFailure.TAG_NOT_LAST,
    );
  });

  it("TOO_MANY_BYTES_AFTER_TAG: 129 bytes after the hash (128 pass)", () => {
    const long = concat(new Uint8Array(30), RSK_TAG, hfm, new Uint8Array(129));
    expect(reasonOf(proofFor(hfm, long, compressCoinbaseAt(long, 0)))).toBe(
      ProofFailure.TOO_MANY_BYTES_AFTER_TAG,
    );
    const ok = concat(new Uint8Array(30), RSK_TAG, hfm, new Uint8Array(128));
    expect(reasonOf(proofFor(hfm, ok, compressCoinbaseAt(ok, 0)))).toBe("ok");
  });

  it("COINBASE_TOO_SHORT: 64 bytes in all (65 pass)", () => {
    const short = concat(new Uint8Array(23), RSK_TAG, hfm);
    expect(short).toHaveLength(64);
    expect(reasonOf(proofFor(hfm, short, compressCoinbaseAt(short, 0)))).toBe(
      ProofFailure.COINBASE_TOO_SHORT,
    );
    const enough = concat(new Uint8Array(24), RSK_TAG, hfm);
    expect(reasonOf(proofFor(hfm, enough, compressCoinbaseAt(enough, 0)))).toBe("ok");
  });

  it("MERKLE_64_BYTE_TRANSACTION: a step whose halves read as a one-input, one-output transaction", () => {
    // Find a coinbase whose txid, shown in display order, has 0x01 (one input) at byte 4.
    let extra = 0n;
    let coinbase = syntheticCoinbase(hfm, extra);
    while (doubleSha256(coinbase)[27] !== 1) coinbase = syntheticCoinbase(hfm, ++extra);
    const acc = doubleSha256(coinbase);
    // The sibling, as stored in the proof (display order), completes the transaction.
    const sibling = new Uint8Array(32);
    sibling[9] = 4; // input script length 4 (index 0 at bytes 5..8)
    sibling[18] = 1; // one output
    sibling[19] = 1; // value 1 satoshi
    sibling[27] = 0; // output script length 0
    expect(isValid64ByteTransaction(concat(reverse(acc), sibling))).toBe(true);
    const root = hashPair(acc, reverse(sibling));
    const input: MergedMiningProofInput = {
      hashForMergedMining: hfm,
      difficulty: 3n,
      bitcoinHeader: minedHeader(root, 3n),
      coinbase: compressCoinbase(coinbase),
      merkleProof: sibling,
    };
    expect(reasonOf(input)).toBe(ProofFailure.MERKLE_64_BYTE_TRANSACTION);
    // With a value of 0 satoshis it is no transaction, and the root matches.
    sibling[19] = 0;
    expect(
      reasonOf({
        ...input,
        bitcoinHeader: minedHeader(hashPair(acc, reverse(sibling)), 3n),
        merkleProof: sibling,
      }),
    ).toBe("ok");
  });

  it("MERKLE_ROOT_MISMATCH", () => {
    const p = Uint8Array.from(good.merkleProof);
    p[0]! ^= 1;
    expect(reasonOf({ ...good, merkleProof: p })).toBe(ProofFailure.MERKLE_ROOT_MISMATCH);
    expect(reasonOf({ ...good, merkleProof: new Uint8Array(0) })).toBe(
      ProofFailure.MERKLE_ROOT_MISMATCH,
    );
  });

  it("messages name the numbers", () => {
    const r = verifyMergedMiningProof({ ...good, merkleProof: new Uint8Array(992) });
    expect(r).toEqual({
      ok: false,
      reason: "PROOF_TOO_LONG",
      message: "Merkle proof is 992 bytes, at most 960",
    });
  });

  it("programming errors throw: a hashForMergedMining of the wrong size, a negative difficulty", () => {
    expect(() =>
      verifyMergedMiningProof({ ...good, hashForMergedMining: new Uint8Array(31) }),
    ).toThrow(/32 bytes/);
    expect(() => verifyMergedMiningProof({ ...good, difficulty: -1n })).toThrow(/negative/);
  });
});

describe("isValid64ByteTransaction (the reference's field rules)", () => {
  const valid = () => {
    const b = new Uint8Array(64);
    b[4] = 1;
    b[41] = 2; // input script 2 bytes
    b[48] = 1; // one output (4 + 1 + 32 + 4 + 1 + 2 + 4 = 48)
    b[49] = 0x10; // value 16
    b[57] = 2; // output script 2 bytes
    return b;
  };
  it("accepts the crafted transaction, and each broken field rejects it", () => {
    expect(isValid64ByteTransaction(valid())).toBe(true);
    const cases: [number, number][] = [
      [4, 2], // two inputs
      [41, 5], // input script too long
      [41, 0x80], // negative as a signed byte
      [48, 2], // two outputs
      [57, 3], // scripts do not add up to 4
    ];
    for (const [at, v] of cases) {
      const b = valid();
      b[at] = v;
      expect(isValid64ByteTransaction(b), `byte ${at} = ${v}`).toBe(false);
    }
    const zero = valid();
    zero[49] = 0;
    expect(isValid64ByteTransaction(zero)).toBe(false);
    const tooMuch = valid();
    tooMuch.set([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00], 49);
    expect(isValid64ByteTransaction(tooMuch)).toBe(false);
    const bigIndex = valid();
    bigIndex.set([0x41, 0x42, 0x0f, 0x00], 37); // 1,000,001
    expect(isValid64ByteTransaction(bigIndex)).toBe(false);
    const coinbaseIndex = valid();
    coinbaseIndex.set([0xff, 0xff, 0xff, 0xff], 37);
    expect(isValid64ByteTransaction(coinbaseIndex)).toBe(true);
  });
});

describe("properties", () => {
  const caseArb = fc.record({
    hfm: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    before: fc.uint8Array({ minLength: 24, maxLength: 260 }),
    after: fc.uint8Array({ maxLength: 128 }),
    others: fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { maxLength: 20 }),
    difficulty: fc.bigInt({ min: 0n, max: 500n }),
  });

  function build(c: {
    hfm: Uint8Array;
    before: Uint8Array;
    after: Uint8Array;
    others: Uint8Array[];
    difficulty: bigint;
  }) {
    const cb = concat(c.before, RSK_TAG, c.hfm, c.after);
    return proofFor(c.hfm, cb, compressCoinbase(cb), c.others, c.difficulty);
  }

  it("a proof built by the library verifies (from txids and from a raw-order branch alike)", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        fc.pre(Buffer.from(concat(c.hfm, c.after)).indexOf(Buffer.from(RSK_TAG)) < 0);
        const input = build(c);
        expect(reasonOf(input)).toBe("ok");
        const txids = [compressedCoinbaseTxid(input.coinbase), ...c.others];
        const branch = [txids[0]!, ...coinbaseBranch(txids)];
        expect(toHex(merkleProofFromBranch(branch))).toBe(toHex(input.merkleProof));
      }),
      { numRuns: 60 },
    );
  });

  it("flipping any single bit of the coinbase, the proof or the header's Merkle root fails with a reason", () => {
    fc.assert(
      fc.property(
        caseArb,
        fc.constantFrom("coinbase", "merkleProof", "root"),
        fc.nat(),
        (c, field, n) => {
          fc.pre(Buffer.from(concat(c.hfm, c.after)).indexOf(Buffer.from(RSK_TAG)) < 0);
          const input = build(c);
          const bytes = field === "root" ? input.bitcoinHeader.subarray(36, 68) : input[field];
          fc.pre(bytes.length > 0);
          const bit = n % (bytes.length * 8);
          const flipped = Uint8Array.from(bytes);
          flipped[bit >> 3]! ^= 1 << (bit & 7);
          const changed =
            field === "root"
              ? {
                  bitcoinHeader: concat(
                    input.bitcoinHeader.subarray(0, 36),
                    flipped,
                    input.bitcoinHeader.subarray(68),
                  ),
                }
              : { [field]: flipped };
          const r = verifyMergedMiningProof({ ...input, ...changed });
          expect(r.ok).toBe(false);
          if (!r.ok) {
            expect(Object.values(ProofFailure)).toContain(r.reason);
            expect(r.message.length).toBeGreaterThan(10);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("merkleProofFromBranch and buildMerkleProof", () => {
  it("reject an empty branch and hashes that are not 32 bytes", () => {
    expect(() => merkleProofFromBranch([])).toThrow("The list of merkle hashes can't be empty");
    expect(() => merkleProofFromBranch([new Uint8Array(31)])).toThrow(/32 bytes/);
    expect(() => buildMerkleProof([new Uint8Array(33)])).toThrow(/32 bytes/);
    expect(merkleProofFromBranch([new Uint8Array(32)])).toHaveLength(0);
  });

  it("store each sibling byte-reversed", () => {
    const a = new Uint8Array(32).fill(1);
    const s = Uint8Array.from({ length: 32 }, (_, i) => i);
    expect(toHex(merkleProofFromBranch([a, s]))).toBe(toHex(reverse(s)));
    expect(toHex(buildMerkleProof([a, s]))).toBe(toHex(reverse(s)));
  });
});

describe("checkTimestampLink", () => {
  const header = (time: number) =>
    encodeBitcoinHeader({
      version: 1,
      prevHash: new Uint8Array(32),
      merkleRoot: new Uint8Array(32),
      time,
      bits: 0,
      nonce: 0,
    });
  it("|BTC time − block time| < limit, both directions", () => {
    expect(
      checkTimestampLink({ bitcoinHeader: header(1000), timestamp: 1299n, limitSeconds: 300 }).ok,
    ).toBe(true);
    expect(
      checkTimestampLink({ bitcoinHeader: header(1000), timestamp: 701n, limitSeconds: 300 }).ok,
    ).toBe(true);
    expect(
      checkTimestampLink({ bitcoinHeader: header(1000), timestamp: 1300n, limitSeconds: 300 }),
    ).toEqual({
      ok: false,
      message: "Bitcoin time 1000 and block timestamp 1300 are 300 s apart, limit 300 s",
    });
    expect(
      checkTimestampLink({ bitcoinHeader: header(1000), timestamp: 700n, limitSeconds: 300 }).ok,
    ).toBe(false);
    expect(
      checkTimestampLink({
        bitcoinHeader: header(0xffffffff),
        timestamp: 0xffffffffn,
        limitSeconds: 1,
      }).ok,
    ).toBe(true);
    expect(
      checkTimestampLink({ bitcoinHeader: new Uint8Array(79), timestamp: 0n, limitSeconds: 1 }).ok,
    ).toBe(false);
  });
});
