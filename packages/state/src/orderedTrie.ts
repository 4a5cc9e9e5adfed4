import { RLP } from "@ethereumjs/rlp";
import { keccak256 } from "@nodex/types";
import { EMPTY_TRIE_ROOT } from "./emptyTrie.js";
import { commonLength, encodePath, nibbles } from "./triePaths.js";

const EMPTY = new Uint8Array();

type Nibbles = Uint8Array;
type TrieNode =
  | { readonly kind: "leaf"; readonly path: Nibbles; readonly value: Uint8Array }
  | { readonly kind: "extension"; readonly path: Nibbles; child: TrieNode }
  | { readonly kind: "branch"; readonly children: (TrieNode | undefined)[]; value: Uint8Array };
type Item = Uint8Array | Item[];

/**
 * Root of a trie keyed by RLP(index) holding `values` in order: a block's transactions root and
 * receipts root. The Ethereum Merkle Patricia trie, built in memory as plain objects and hashed
 * once (no node store, no per-insert hashing): a full block's roots cost a fraction of building
 * them in a database-backed trie. The tests check it against `@ethereumjs/mpt`.
 */
export async function orderedTrieRoot(values: readonly Uint8Array[]): Promise<Uint8Array> {
  if (values.length === 0) return EMPTY_TRIE_ROOT.slice();
  // The root is hashed even when its encoding is shorter than 32 bytes.
  return keccak256(RLP.encode(encodeNode(buildOrderedTrie(values))));
}

/**
 * The Merkle proof of entry `index` of the ordered trie of `values` (the trie whose root
 * `orderedTrieRoot` gives): the RLP of each node on the path to key RLP(index), root first, as
 * `eth_getProof` orders its nodes. Nodes short enough to sit inline in their parent are not
 * listed on their own (as geth's proofs). keccak256 of the first node is the root; an Ethereum
 * verifier (`@ethereumjs/mpt` `verifyMerkleProof`) finds `values[index]` under key RLP(index).
 */
export function orderedTrieProof(values: readonly Uint8Array[], index: number): Uint8Array[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= values.length) {
    throw new RangeError(`entry ${index} is not in an ordered trie of ${values.length} values`);
  }
  const proof: Uint8Array[] = [];
  let node: TrieNode | undefined = buildOrderedTrie(values);
  let path: Nibbles = nibbles(RLP.encode(index));
  let first = true;
  while (node !== undefined) {
    const encoded = RLP.encode(encodeNode(node));
    if (first || encoded.length >= 32) proof.push(encoded);
    first = false;
    if (node.kind === "leaf") break;
    if (node.kind === "extension") {
      path = path.slice(node.path.length);
      node = node.child;
    } else {
      if (path.length === 0) break;
      node = node.children[path[0]!];
      path = path.slice(1);
    }
  }
  return proof;
}

/** The trie of `values` keyed by RLP(index), as plain objects. `values` is not empty. */
function buildOrderedTrie(values: readonly Uint8Array[]): TrieNode {
  let root: TrieNode | undefined;
  for (let i = 0; i < values.length; i++) {
    // An empty value would mean "no entry" in a trie; transactions and receipts are never empty.
    if (values[i]!.length === 0) throw new RangeError(`value ${i} of an ordered trie is empty`);
    root = insert(root, nibbles(RLP.encode(i)), values[i]!);
  }
  return root!;
}

function newBranch(): TrieNode & { kind: "branch" } {
  return {
    kind: "branch",
    children: new Array<TrieNode | undefined>(16).fill(undefined),
    value: EMPTY,
  };
}

/** Puts `value` at `path` below `node` (a leaf, an extension or a branch, or nothing yet). */
function insert(node: TrieNode | undefined, path: Nibbles, value: Uint8Array): TrieNode {
  if (node === undefined) return { kind: "leaf", path, value };
  if (node.kind === "branch") {
    if (path.length === 0) {
      node.value = value;
      return node;
    }
    node.children[path[0]!] = insert(node.children[path[0]!], path.slice(1), value);
    return node;
  }
  const common = commonLength(node.path, path);
  if (node.kind === "leaf" && common === node.path.length && common === path.length)
    return { kind: "leaf", path, value };
  if (node.kind === "extension" && common === node.path.length) {
    node.child = insert(node.child, path.slice(common), value);
    return node;
  }
  // The paths part at `common`: a branch there holds the old node's rest and the new value.
  const branch = newBranch();
  const rest = node.path.slice(common);
  if (node.kind === "leaf") {
    if (rest.length === 0) branch.value = node.value;
    else branch.children[rest[0]!] = { kind: "leaf", path: rest.slice(1), value: node.value };
  } else {
    branch.children[rest[0]!] =
      rest.length === 1
        ? node.child
        : { kind: "extension", path: rest.slice(1), child: node.child };
  }
  const newRest = path.slice(common);
  if (newRest.length === 0) branch.value = value;
  else branch.children[newRest[0]!] = { kind: "leaf", path: newRest.slice(1), value };
  return common === 0 ? branch : { kind: "extension", path: path.slice(0, common), child: branch };
}

function encodeNode(node: TrieNode): Item[] {
  switch (node.kind) {
    case "leaf":
      return [encodePath(node.path, true), node.value];
    case "extension":
      return [encodePath(node.path, false), reference(node.child)];
    case "branch":
      return [...node.children.map((c) => (c === undefined ? EMPTY : reference(c))), node.value];
  }
}

/** How a parent refers to a node: inline when its encoding is under 32 bytes, else by hash. */
function reference(node: TrieNode): Item {
  const item = encodeNode(node);
  const encoded = RLP.encode(item);
  return encoded.length < 32 ? item : keccak256(encoded);
}
