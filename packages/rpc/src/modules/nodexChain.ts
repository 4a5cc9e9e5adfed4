import { bytesToHex, encodeHeader, encodeReceipt } from "@nodex/types";
import type { Ledger } from "../ledger.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";

/** The chain-specific raw views: header and receipt RLP. */
export function nodexChainModule(ledger: Ledger) {
  return defineModule("nodex", {
    getRawBlockHeaderByHash: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await ledger.chain.getBlockByHash(hash);
        return found === undefined ? null : bytesToHex(encodeHeader(found.block.header));
      },
    }),
    getRawBlockHeaderByNumber: method({
      params: [p.blockNumberOrTag],
      result: r.json,
      handler: async (_s, [block]) => {
        const found = await ledger.resolve(block);
        return found === null ? null : bytesToHex(encodeHeader(found.block.header));
      },
    }),
    getRawTransactionReceiptByHash: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await ledger.receipt(hash);
        return found === null ? null : bytesToHex(encodeReceipt(found.receipt));
      },
    }),
  });
}
