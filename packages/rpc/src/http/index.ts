import type { HttpLayer } from "../options.js";
import { createNodeHttpTransport } from "./nodeHttp.js";
import type { HttpTransportFactory } from "./transport.js";

/**
 * The HTTP layer for `--rpc-http-layer`: Node's own (`node:net` with the request reader of
 * `wire.ts`, and `node:http` for the rest) whichever value is given; `auto` is kept for the
 * configurations that name it.
 */
export function chooseTransport(_layer: HttpLayer): {
  layer: "node";
  factory: HttpTransportFactory;
} {
  return { layer: "node", factory: createNodeHttpTransport };
}
