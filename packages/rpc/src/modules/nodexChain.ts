import { bytesToHex, CodecError, encodeHeaderForHash, encodeReceipt } from "@nodex/types";
import { jsonType } from "../json.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService } from "../services.js";

/** Hashes one `nodex_getTrieNodes` takes at most. */
export const MAX_TRIE_NODES = 1024;

/** `nodex_getTrieNodes`' list of node hashes. */
const nodeHashes = {
  name: "hashes",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): Uint8Array[] => {
    if (!Array.isArray(value))
      throw new CodecError(arg, `expected an array of node hashes, got ${jsonType(value)}`);
    if (value.length > MAX_TRIE_NODES)
      throw new CodecError(arg, `at most ${MAX_TRIE_NODES} hashes a call, got ${value.length}`);
    return value.map((v, i) => {
      try {
        return p.hash.parse(v, arg);
      } catch (err) {
        if (err instanceof CodecError) throw new CodecError(arg, `hashes[${i}]: ${err.reason}`);
        throw err;
      }
    });
  },
};

/** The chain-specific raw views: header and receipt RLP, the receipt's trie nodes. */
export function nodexChainModule(reader: ChainReaderService) {
  return defineModule("nodex", {
    // The reference node's raw header: the header as it is hashed (18 fields, the Bitcoin header
    // its only merged-mining field), so keccak256 of it is the block hash.
    getRawBlockHeaderByHash: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await reader.blockByHash(hash);
        return found === null ? null : bytesToHex(encodeHeaderForHash(found.block.header));
      },
    }),
    getRawBlockHeaderByNumber: method({
      params: [p.blockNumberOrTag],
      result: r.json,
      handler: async (_s, [block]) => {
        const found = await reader.resolve(block);
        return found === null ? null : bytesToHex(encodeHeaderForHash(found.block.header));
      },
    }),
    // The reference node's rsk_getTransactionReceiptNodesByHash: the nodes of the receipts
    // trie (Ethereum's Merkle Patricia trie here) from the receipt's leaf up to the root.
    getTransactionReceiptNodesByHash: method({
      params: [p.hash, p.hash],
      result: r.json,
      handler: async (_s, [blockHash, txHash]) =>
        (await reader.receiptNodes(blockHash, txHash)).map(bytesToHex),
    }),
    // State trie nodes by hash, null for one the node does not hold: what a fork of this chain
    // asks for when a deletion needs a node that no proof it fetched holds.
    getTrieNodes: method({
      params: [nodeHashes],
      result: r.json,
      handler: async (_s, [hashes]) => {
        const nodes = (await reader.trieNodes?.(hashes)) ?? hashes.map(() => undefined);
        return nodes.map((node) => (node === undefined ? null : bytesToHex(node)));
      },
    }),
    getRawTransactionReceiptByHash: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await reader.receipt(hash);
        return found === null ? null : bytesToHex(encodeReceipt(found.receipt));
      },
    }),
  });
}
