import { verifyMerkleProof } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { getBytes, hexlify, keccak256, toBeHex } from "ethers";

// An independent check of eth_getProof answers: @ethereumjs/mpt's proof verifier and ethers'
// Keccak-256, none of the node's code. The state and storage tries are Ethereum's secure tries:
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

const quantity = (bytes: Uint8Array) =>
  bytes.length === 0 ? "0x0" : `0x${BigInt(hexlify(bytes)).toString(16)}`;

/**
 * Verifies the account part of an answer against `stateRoot`: the proof's nodes lead from the
 * root to keccak256(address); the account RLP found there ([nonce, balance, storageRoot,
 * codeHash]) matches the answer's fields, or, when the proof shows no account (an exclusion
 * proof), the answer is the empty account. Returns whether the account exists.
 */
export async function verifyAccount(answer: AccountProof, stateRoot: string): Promise<boolean> {
  const found = await verifyMerkleProof(
    getBytes(keccak256(answer.address)),
    answer.accountProof.map((n) => getBytes(n)),
    { root: getBytes(stateRoot) },
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
  const found = await verifyMerkleProof(
    getBytes(keccak256(slot)),
    entry.proof.map((n) => getBytes(n)),
    { root: getBytes(storageHash) },
  );
  const value = found === null ? 0n : BigInt(quantity(RLP.decode(found) as Uint8Array));
  expectEqual(entry.value, `0x${value.toString(16)}`, `value of slot ${entry.key}`);
  return value;
}

function expectEqual(actual: string, expected: string, what: string): void {
  if (actual !== expected)
    throw new Error(`${what}: answered ${actual}, the proof says ${expected}`);
}
