import { verifyMerkleProof } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { getBytes, hexlify, keccak256, toBeHex } from "ethers";

// An independent check of eth_getProof answers: @ethereumjs/mpt's proof verifier, and a walk of
// the proof written here from the Yellow Paper's trie (walkProof), with ethers' Keccak-256; none
// of the node's code. The state and storage tries are Ethereum's secure tries:
// an account sits under keccak256(address), a slot under keccak256(32-byte slot).

export type StorageProof = { key: string; value: string; proof: string[] };
export interface AccountProof {
  address: string;
  balance: string;
  codeHash: string;
  nonce: string;
  storageHash: string;
  accountProof: string[];
  storageProof: StorageProof[];
}

/** keccak256 of the RLP of an empty trie. */
export const EMPTY_TRIE_ROOT = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";
/** keccak256 of no bytes: the code hash of an account without code. */
export const EMPTY_CODE_HASH = "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470";

type Item = Uint8Array | Item[];

function nibbles(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (const b of bytes) out.push(b >> 4, b & 0x0f);
  return out;
}

/**
 * The value a root-first Merkle proof shows under `key` in the trie of `root`, or `null` when it
 * shows the key absent; throws when the proof does not lead there (a node missing or not part
 * of the trie of `root`). Each node is found by its Keccak-256 (inline nodes inside their
 * parent); a branch has 17 items, a leaf or extension 2 (a hex-prefix path, flag 2 or 3 for a
 * leaf, odd flags with one path nibble in the first byte).
 */
export async function walkProof(
  root: Uint8Array,
  key: Uint8Array,
  proof: readonly Uint8Array[],
): Promise<Uint8Array | null> {
  const byHash = new Map(proof.map((node) => [keccak256(node), node]));
  let path = nibbles(key);
  let ref: Item = root;
  for (;;) {
    let node: Item[];
    if (ref instanceof Uint8Array) {
      if (ref.length === 0) return null;
      const raw = byHash.get(hexlify(ref));
      if (raw === undefined) throw new Error(`the proof has no node ${hexlify(ref)}`);
      node = RLP.decode(raw) as Item[];
    } else {
      node = ref;
    }
    if (node.length === 17) {
      if (path.length === 0) {
        const value = node[16] as Uint8Array;
        return value.length === 0 ? null : value;
      }
      ref = node[path[0]!]!;
      path = path.slice(1);
      continue;
    }
    if (node.length !== 2) throw new Error(`a trie node of ${node.length} items`);
    const encoded = nibbles(node[0] as Uint8Array);
    const flag = encoded[0]!;
    const own = encoded.slice(flag % 2 === 1 ? 1 : 2);
    const matches = own.every((n, i) => path[i] === n);
    if (flag >= 2) return matches && own.length === path.length ? (node[1] as Uint8Array) : null;
    if (!matches) return null;
    path = path.slice(own.length);
    ref = node[1]!;
  }
}

/** Both verifiers, which must agree. */
export async function proven(
  root: Uint8Array,
  key: Uint8Array,
  proof: readonly Uint8Array[],
): Promise<Uint8Array | null> {
  const theirs = await verifyMerkleProof(key, [...proof], { root });
  const ours = await walkProof(root, key, proof);
  const show = (v: Uint8Array | null) => (v === null ? "null" : hexlify(v));
  if (show(theirs) !== show(ours)) {
    throw new Error(`the verifiers disagree: ${show(theirs)} and ${show(ours)}`);
  }
  return ours;
}

const quantity = (bytes: Uint8Array) =>
  bytes.length === 0 ? "0x0" : `0x${BigInt(hexlify(bytes)).toString(16)}`;

/**
 * Verifies the account part of an answer against `stateRoot`: the proof's nodes lead from the
 * root to keccak256(address); the account RLP found there ([nonce, balance, storageRoot,
 * codeHash]) matches the answer's fields, or, when the proof shows no account (an exclusion
 * proof), the answer is the empty account. Returns whether the account exists.
 */
export async function verifyAccount(answer: AccountProof, stateRoot: string): Promise<boolean> {
  const found = await proven(
    getBytes(stateRoot),
    getBytes(keccak256(answer.address)),
    answer.accountProof.map((n) => getBytes(n)),
  );
  if (found === null) {
    expectEqual(answer.nonce, "0x0", "nonce of an absent account");
    expectEqual(answer.balance, "0x0", "balance of an absent account");
    expectEqual(answer.storageHash, EMPTY_TRIE_ROOT, "storageHash of an absent account");
    expectEqual(answer.codeHash, EMPTY_CODE_HASH, "codeHash of an absent account");
    return false;
  }
  const [nonce, balance, storageRoot, codeHash] = RLP.decode(found) as Uint8Array[];
  expectEqual(answer.nonce, quantity(nonce!), "nonce");
  expectEqual(answer.balance, quantity(balance!), "balance");
  expectEqual(answer.storageHash, hexlify(storageRoot!), "storageHash");
  expectEqual(answer.codeHash, hexlify(codeHash!), "codeHash");
  return true;
}

/**
 * Verifies one storage proof against the account's storage root: the nodes lead from
 * `storageHash` to keccak256(slot); the RLP value there is the answer's `value`, or the proof
 * shows the slot empty and the value is 0. An account with an empty storage trie has nothing to
 * prove from (an empty proof, value 0). Returns the proven value.
 */
export async function verifyStorage(storageHash: string, entry: StorageProof): Promise<bigint> {
  const slot = getBytes(toBeHex(BigInt(entry.key), 32));
  if (storageHash === EMPTY_TRIE_ROOT && entry.proof.length === 0) {
    expectEqual(entry.value, "0x0", "value in an empty storage trie");
    return 0n;
  }
  const found = await proven(
    getBytes(storageHash),
    getBytes(keccak256(slot)),
    entry.proof.map((n) => getBytes(n)),
  );
  const value = found === null ? 0n : BigInt(quantity(RLP.decode(found) as Uint8Array));
  expectEqual(entry.value, `0x${value.toString(16)}`, `value of slot ${entry.key}`);
  return value;
}

function expectEqual(actual: string, expected: string, what: string): void {
  if (actual !== expected)
    throw new Error(`${what}: answered ${actual}, the proof says ${expected}`);
}
