import { defineModule, method } from "../registry.js";
import { r } from "../results.js";

/** The chain's wire protocol version, as the reference node reports it (62). */
export const PROTOCOL_VERSION = 0x3e;

export const nodex = defineModule("nodex", {
  protocolVersion: method({
    params: [],
    result: r.quantity,
    handler: () => PROTOCOL_VERSION,
  }),
});
