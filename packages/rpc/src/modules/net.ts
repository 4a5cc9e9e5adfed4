import { defineModule, method } from "../registry.js";
import { r } from "../results.js";

export const net = defineModule("net", {
  version: method({
    params: [],
    result: r.string,
    handler: ({ network }) => String(network.chainId),
  }),
  listening: method({
    params: [],
    result: r.boolean,
    handler: ({ peers }) => peers.listening(),
  }),
  peerCount: method({
    params: [],
    result: r.quantity,
    handler: ({ peers }) => peers.peerCount(),
  }),
  peerList: method({
    params: [],
    result: r.array(r.string),
    handler: ({ peers }) => peers.peerList(),
  }),
});
