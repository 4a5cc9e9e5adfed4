import { keccak256 } from "@nodex/types";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";

export const web3 = defineModule("web3", {
  clientVersion: method({
    params: [],
    result: r.string,
    handler: ({ clientVersion }) => clientVersion,
  }),
  sha3: method({
    params: [p.data],
    result: r.data,
    handler: (_services, [data]) => keccak256(data),
  }),
});
