/** keccak256 of the RLP of an empty trie: the root of a state or storage trie with nothing in it. */
export const EMPTY_TRIE_ROOT = Uint8Array.from(
  Buffer.from("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421", "hex"),
);
