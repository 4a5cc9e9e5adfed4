import type { Logger } from "@nodex/types";
import type { HttpLayer } from "../options.js";
import { createNodeHttpTransport } from "./nodeHttp.js";
import type { HttpTransportFactory } from "./transport.js";
import { createUwsTransport, loadUws } from "./uws.js";

/** An HTTP layer named explicitly that cannot serve on this Node version or platform. */
export class HttpLayerUnavailableError extends Error {
  constructor(
    readonly layer: HttpLayer,
    readonly available: readonly HttpLayer[],
    reason: string,
  ) {
    super(
      `HTTP layer ${layer} (uWebSockets.js) is not available on Node ${process.version} ` +
        `(${process.platform}-${process.arch}): ${reason}; ` +
        `HTTP layers available here: ${available.join(", ")}`,
    );
    this.name = "HttpLayerUnavailableError";
  }
}

type UwsLoader = typeof loadUws;

/** The layers that can be chosen on this Node version and platform. */
export function availableHttpLayers(load: UwsLoader = loadUws): HttpLayer[] {
  return "uws" in load() ? ["auto", "uws", "node"] : ["auto", "node"];
}

/**
 * Picks the HTTP layer. uWebSockets.js answers about twice the requests of node:http
 * (bench/rpc), but its build ships binaries for Node 16, 18 and 20 only. `auto` takes
 * uWebSockets.js where it loads and node:http (with a warning) elsewhere; `uws` named
 * explicitly and not loadable is an error rather than a silent change of layer.
 */
export function chooseTransport(
  layer: HttpLayer,
  log: Logger,
  load: UwsLoader = loadUws,
): { layer: Exclude<HttpLayer, "auto">; factory: HttpTransportFactory } {
  if (layer === "node") return { layer, factory: createNodeHttpTransport };
  const loaded = load();
  if ("uws" in loaded) {
    return { layer: "uws", factory: (app) => createUwsTransport(app, loaded.uws) };
  }
  if (layer === "uws") throw new HttpLayerUnavailableError(layer, ["auto", "node"], loaded.error);
  log.warn("uWebSockets.js is not available on this Node version; serving HTTP with node:http", {
    node: process.version,
    reason: loaded.error,
  });
  return { layer: "node", factory: createNodeHttpTransport };
}
