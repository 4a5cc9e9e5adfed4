import { RLP } from "@ethereumjs/rlp";
import {
  bytesToBigintBE,
  bytesToHex,
  bytesToUnprefixedHex,
  equalBytes,
  keccak256,
} from "@nodex/types";
import { decodeAccount } from "../accountReader.js";
import { EMPTY_TRIE_ROOT } from "../emptyTrie.js";
import { StateError, StateErrorCode } from "../errors.js";
import { decodeNode, findValue, type RawNode, type Ref } from "../fastTrie.js";
import { nibbles } from "../triePaths.js";
import type { AccountState } from "../worldState.js";

export const KECCAK_EMPTY = keccak256(new Uint8Array());
const ZERO_HASH = new Uint8Array(32);

/** An `eth_getProof` answer checked against a state root. */
export interface CheckedProof {
  /** The account at the proven root; `undefined` when the proof shows there is none. */
  readonly account: AccountState | undefined;
  /** The values of the slots asked, in order (0 for none). */
  readonly values: readonly bigint[];
  /**
   * The nodes the check walked through, account trie and storage tries, by their hash
   * (lowercase hex, no `0x`): each one's hash is the reference its parent holds, from the root.
   * Nodes of the answer off the proven paths are not among them.
   */
  readonly nodes: Map<string, Uint8Array>;
}

/**
 * Checks an `eth_getProof(address, slots, block)` answer against `stateRoot`: the account
 * proof is a chain of nodes from the root down the path of keccak256(address) that ends in the
 * returned fields (nonce, balance, storageHash, codeHash), or proves that there is no account
 * (and the fields are the empty account's); each storage proof is such a chain from the
 * account's storage root for keccak256(slot) that ends in the returned value (or proves it
 * unset, and the value is 0). Throws `StateError` `STATE_FORK_UNVERIFIED` naming `upstream`,
 * the address or slot and what differed.
 */
export async function checkProof(
  answer: unknown,
  address: Uint8Array,
  slots: readonly Uint8Array[],
  stateRoot: Uint8Array,
  upstream: string,
): Promise<CheckedProof> {
  const where = `account ${bytesToHex(address)}`;
  const fail = (what: string, meta: Record<string, unknown> = {}) =>
    unverified(upstream, `${where}: ${what}`, { address: bytesToHex(address), ...meta });
  const proof = parseProof(answer, slots.length, fail);
  if (!equalBytes(proof.address, address))
    throw fail(`the proof is of another account, ${bytesToHex(proof.address)}`);
  const nodes = new Map<string, Uint8Array>();
  const stored = await provenValue(stateRoot, keccak256(address), proof.accountProof, nodes, (m) =>
    fail(`the account proof ${m} from the state root ${bytesToHex(stateRoot)}`),
  );
  let account: AccountState | undefined;
  if (stored !== null) {
    try {
      account = decodeAccount(stored);
    } catch {
      throw fail("the proven account is not an RLP account");
    }
    const differs = [
      account.nonce !== proof.nonce && `nonce ${proof.nonce} (proven ${account.nonce})`,
      account.balance !== proof.balance && `balance ${proof.balance} (proven ${account.balance})`,
      !equalBytes(account.storageRoot, proof.storageHash) &&
        `storageHash ${bytesToHex(proof.storageHash)} (proven ${bytesToHex(account.storageRoot)})`,
      !equalBytes(account.codeHash, proof.codeHash) &&
        `codeHash ${bytesToHex(proof.codeHash)} (proven ${bytesToHex(account.codeHash)})`,
    ].filter((d): d is string => d !== false);
    if (differs.length > 0) throw fail(`the answer's ${differs.join(", ")}`);
  } else if (
    proof.nonce !== 0n ||
    proof.balance !== 0n ||
    !(equalBytes(proof.codeHash, KECCAK_EMPTY) || equalBytes(proof.codeHash, ZERO_HASH)) ||
    !(equalBytes(proof.storageHash, EMPTY_TRIE_ROOT) || equalBytes(proof.storageHash, ZERO_HASH))
  ) {
    throw fail("the proof shows no account, the answer gives one");
  }
  const storageRoot = account?.storageRoot ?? EMPTY_TRIE_ROOT;
  const values: bigint[] = [];
  for (const [i, slot] of slots.entries()) {
    const entry = proof.storageProof[i]!;
    const at = `slot ${bytesToHex(slot)}`;
    if (entry.key !== bytesToBigintBE(slot))
      throw fail(`storage proof ${i} is of another slot, 0x${entry.key.toString(16)}`, {
        slot: bytesToHex(slot),
      });
    const value = await provenValue(storageRoot, keccak256(slot), entry.proof, nodes, (m) =>
      fail(`${at}: the storage proof ${m} from the storage root ${bytesToHex(storageRoot)}`, {
        slot: bytesToHex(slot),
      }),
    );
    const proven = value === null ? 0n : storageValue(value);
    if (proven === undefined)
      throw fail(`${at}: the proven value is not RLP bytes`, { slot: bytesToHex(slot) });
    if (proven !== entry.value)
      throw fail(`${at}: the answer's value ${entry.value} (proven ${proven})`, {
        slot: bytesToHex(slot),
      });
    values.push(proven);
  }
  return { account, values, nodes };
}

/**
 * The value at `hashedKey` below `root` as the proof's nodes give it (`null` for none), adding
 * each node walked through to `used`; `fail(reason)` when the nodes do not chain from the root.
 */
async function provenValue(
  root: Uint8Array,
  hashedKey: Uint8Array,
  proofNodes: readonly Uint8Array[],
  used: Map<string, Uint8Array>,
  fail: (reason: string) => StateError,
): Promise<Uint8Array | null> {
  if (equalBytes(root, EMPTY_TRIE_ROOT)) return null;
  const byHash = new Map<string, Uint8Array>();
  for (const node of proofNodes) byHash.set(bytesToUnprefixedHex(keccak256(node)), node);
  const walked = new Map<string, Uint8Array>();
  const resolve = async (ref: Ref): Promise<RawNode | null> => {
    if (!(ref instanceof Uint8Array)) return ref;
    if (ref.length === 0) return null;
    const hex = bytesToUnprefixedHex(ref);
    const bytes = byHash.get(hex);
    // Without the root node, the proof is of another root (another block's state, say).
    if (bytes === undefined && equalBytes(ref, root))
      throw fail(`does not hold node ${hex}, the root: it is a proof of another state, not one`);
    if (bytes === undefined) throw fail(`does not hold node ${hex}, on the path`);
    walked.set(hex, bytes);
    try {
      return decodeNode(bytes);
    } catch {
      throw fail(`holds a malformed node ${hex}`);
    }
  };
  let value: Uint8Array | null;
  try {
    value = await findValue(await resolve(root), nibbles(hashedKey), resolve);
  } catch (error) {
    if (error instanceof StateError) throw error;
    throw fail(`holds a malformed node (${(error as Error).message})`);
  }
  for (const [hex, bytes] of walked) used.set(hex, bytes);
  return value === null || value.length === 0 ? null : value;
}

/** A storage leaf's value, RLP of the trimmed 32-byte word; `undefined` when malformed. */
function storageValue(stored: Uint8Array): bigint | undefined {
  try {
    const item = RLP.decode(stored);
    if (!(item instanceof Uint8Array) || item.length > 32) return undefined;
    return bytesToBigintBE(item);
  } catch {
    return undefined;
  }
}

interface ParsedProof {
  address: Uint8Array;
  balance: bigint;
  nonce: bigint;
  codeHash: Uint8Array;
  storageHash: Uint8Array;
  accountProof: Uint8Array[];
  storageProof: { key: bigint; value: bigint; proof: Uint8Array[] }[];
}

/** The fields of an `eth_getProof` answer, each checked for its form. */
function parseProof(
  answer: unknown,
  slotCount: number,
  fail: (what: string) => StateError,
): ParsedProof {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer))
    throw fail("the eth_getProof answer is not an object");
  const a = answer as Record<string, unknown>;
  const field = <T>(name: string, parse: (v: unknown) => T | undefined): T => {
    const value = parse(a[name]);
    if (value === undefined) throw fail(`the eth_getProof answer's ${name} is malformed`);
    return value;
  };
  const storage = field("storageProof", (v) => (Array.isArray(v) ? v : undefined));
  if (storage.length !== slotCount)
    throw fail(`the answer holds ${storage.length} storage proofs for ${slotCount} slots asked`);
  return {
    address: field("address", (v) => hexData(v, 20)),
    balance: field("balance", (v) => hexNumber(v)),
    nonce: field("nonce", (v) => hexNumber(v)),
    codeHash: field("codeHash", (v) => hexData(v, 32)),
    storageHash: field("storageHash", (v) => hexData(v, 32)),
    accountProof: field("accountProof", hexList),
    storageProof: storage.map((entry, i) => {
      const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<
        string,
        unknown
      >;
      const key = hexNumber(e.key);
      const value = hexNumber(e.value);
      const proof = hexList(e.proof);
      if (key === undefined || value === undefined || proof === undefined)
        throw fail(`the answer's storage proof ${i} is malformed`);
      return { key, value, proof };
    }),
  };
}

const HEX_DATA = /^0x(?:[0-9a-fA-F]{2})*$/;
const HEX_NUMBER = /^0x[0-9a-fA-F]{1,64}$/;

function hexData(value: unknown, size?: number): Uint8Array | undefined {
  if (typeof value !== "string" || !HEX_DATA.test(value)) return undefined;
  const bytes = Uint8Array.from(Buffer.from(value.slice(2), "hex"));
  return size === undefined || bytes.length === size ? bytes : undefined;
}

/** A number in hex of at most 256 bits (leading zeros allowed: a slot key is often 32 bytes). */
function hexNumber(value: unknown): bigint | undefined {
  return typeof value === "string" && HEX_NUMBER.test(value) ? BigInt(value) : undefined;
}

function hexList(value: unknown): Uint8Array[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: Uint8Array[] = [];
  for (const item of value) {
    const bytes = hexData(item);
    if (bytes === undefined || bytes.length === 0) return undefined;
    out.push(bytes);
  }
  return out;
}

/** `STATE_FORK_UNVERIFIED`: the upstream's answer does not hold up. */
export function unverified(
  upstream: string,
  what: string,
  meta: Record<string, unknown> = {},
): StateError {
  return new StateError(
    StateErrorCode.FORK_UNVERIFIED,
    `the fork's upstream ${upstream} gave an unverified answer: ${what}`,
    { upstream, ...meta },
  );
}
