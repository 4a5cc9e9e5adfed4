import type { Logger } from "@nodex/types";
import type { HttpLayer } from "../options.js";
import { createNodeHttpTransport } from "./nodeHttp.js";
import type { HttpTransportFactory } from "./transport.js";
import { createUwsTransport, loadUws } from "./uws.js";

/**
 * Picks the HTTP layer. uWebSockets.js answers about twice the requests of node:http
 * (bench/rpc); where its native binary does not load, node:http serves instead.
 */
export function chooseTransport(
  layer: HttpLayer,
  log: Logger,
): { layer: HttpLayer; factory: HttpTransportFactory } {
  if (layer === "node") return { layer, factory: createNodeHttpTransport };
  const loaded = loadUws();
  if ("uws" in loaded) return { layer, factory: (app) => createUwsTransport(app, loaded.uws) };
  log.warn("uWebSockets.js does not load here; serving HTTP with node:http", {
    reason: loaded.error,
  });
  return { layer: "node", factory: createNodeHttpTransport };
}
