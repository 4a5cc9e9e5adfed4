import { bytesToHex, encodeBlock, encodeHeader, encodeReceipt } from "@nodex/types";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService } from "../services.js";

/**
 * Geth's raw views of the debug module: the block, its header and its receipts as the chain
 * encodes them (RLP), by any block selector (an unknown block is -32602 `block … not found`, as
 * geth answers an error), and a transaction's signed bytes by hash (`null` when unknown).
 */
export function debugRawModule(reader: ChainReaderService) {
  return defineModule("debug", {
    getRawBlock: method({
      params: [p.blockSelector],
      result: r.data,
      handler: async (_s, [selector]) => encodeBlock((await reader.require(selector)).block),
    }),
    // The header as the block holds it, merged-mining fields included; the form the block hash
    // is taken of is nodex_getRawBlockHeaderByHash's.
    getRawHeader: method({
      params: [p.blockSelector],
      result: r.data,
      handler: async (_s, [selector]) =>
        encodeHeader((await reader.require(selector)).block.header),
    }),
    getRawReceipts: method({
      params: [p.blockSelector],
      result: r.array(r.string),
      handler: async (_s, [selector]) =>
        (await reader.blockReceipts(await reader.require(selector))).map((found) =>
          bytesToHex(encodeReceipt(found.receipt)),
        ),
    }),
    getRawTransaction: method({
      params: [p.hash],
      result: r.nullable(r.data),
      handler: async (_s, [hash]) =>
        (await reader.transaction(hash))?.tx.raw ?? reader.pendingTransaction(hash)?.raw ?? null,
    }),
  });
}
