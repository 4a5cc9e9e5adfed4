import { bytesToHex, encodeHeaderForHash, encodeReceipt } from "@nodex/types";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService } from "../services.js";

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
