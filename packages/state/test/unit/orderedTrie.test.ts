import { createMerkleProof, createMPT, verifyMerkleProof } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { bytesToHex, hexToBytes, keccak256 } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EMPTY_TRIE_ROOT, orderedTrieProof, orderedTrieRoot } from "../../src/index.js";

async function mptRoot(values: readonly Uint8Array[]): Promise<Uint8Array> {
  const trie = await createMPT();
  for (let i = 0; i < values.length; i++) await trie.put(RLP.encode(i), values[i]!);
  return trie.root();
}

describe("orderedTrieRoot", () => {
  it("refuses an empty value (it would mean no entry)", async () => {
    await expect(orderedTrieRoot([Uint8Array.of(1), new Uint8Array()])).rejects.toThrow(
      "value 1 of an ordered trie is empty",
    );
  });

  it("is the empty trie root for no values", async () => {
    expect(await orderedTrieRoot([])).toEqual(EMPTY_TRIE_ROOT);
  });

  it("hashes a block of one real transaction (EIP-155's signed example) as the trie does", async () => {
    const tx = hexToBytes(
      "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83",
    );
    expect(bytesToHex(await orderedTrieRoot([tx]))).toBe(bytesToHex(await mptRoot([tx])));
  });

  it("gives the trie's root for any values, one or many", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 120 }), { minLength: 1, maxLength: 5 }),
        async (values) => {
          expect(await orderedTrieRoot(values)).toEqual(await mptRoot(values));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("gives the trie's root for block-sized lists (keys of one, two and three bytes)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 90 }), { minLength: 2, maxLength: 700 }),
        async (values) => {
          expect(await orderedTrieRoot(values)).toEqual(await mptRoot(values));
        },
      ),
      { numRuns: 25 },
    );
    const many = Array.from({ length: 1200 }, (_, i) => Uint8Array.of(i & 0xff, i >> 8, 7));
    expect(await orderedTrieRoot(many)).toEqual(await mptRoot(many));
  });
});

describe("orderedTrieProof", () => {
  it("refuses an index outside the values", () => {
    expect(() => orderedTrieProof([Uint8Array.of(1)], 1)).toThrow(
      "entry 1 is not in an ordered trie of 1 values",
    );
    expect(() => orderedTrieProof([Uint8Array.of(1)], -1)).toThrow(RangeError);
  });

  it("proves every entry to @ethereumjs/mpt's verifier, root first, as its own proofs", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 120 }), { minLength: 1, maxLength: 300 }),
        fc.nat(),
        async (values, pick) => {
          const index = pick % values.length;
          const root = await orderedTrieRoot(values);
          const proof = orderedTrieProof(values, index);
          expect(keccak256(proof[0]!)).toEqual(root);
          const key = RLP.encode(index);
          expect(await verifyMerkleProof(key, proof, { root })).toEqual(values[index]);
          // The same nodes as the trie library's own proof, less the ones it lists inline.
          const trie = await createMPT();
          for (let i = 0; i < values.length; i++) await trie.put(RLP.encode(i), values[i]!);
          const theirs = (await createMerkleProof(trie, key)).filter(
            (node, i) => i === 0 || node.length >= 32,
          );
          expect(proof.map(bytesToHex)).toEqual(theirs.map(bytesToHex));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("proves receipt-sized entries of a 1,200-entry list (three-byte keys)", async () => {
    const values = Array.from({ length: 1200 }, (_, i) => new Uint8Array(300).fill(i & 0xff));
    const root = await orderedTrieRoot(values);
    for (const index of [0, 1, 127, 128, 255, 256, 1199]) {
      const proof = orderedTrieProof(values, index);
      expect(await verifyMerkleProof(RLP.encode(index), proof, { root })).toEqual(values[index]);
    }
  });

  it("fails verification against another root or for another key", async () => {
    const values = [Uint8Array.of(1, 2, 3), new Uint8Array(40).fill(9), new Uint8Array(50)];
    const proof = orderedTrieProof(values, 1);
    const other = await orderedTrieRoot([...values, Uint8Array.of(4)]);
    await expect(verifyMerkleProof(RLP.encode(1), proof, { root: other })).rejects.toThrow();
    const root = await orderedTrieRoot(values);
    expect(await verifyMerkleProof(RLP.encode(1), proof, { root })).toEqual(values[1]);
    expect(await verifyMerkleProof(RLP.encode(1), proof, { root })).not.toEqual(values[2]);
  });
});
