import type { HttpApp } from "./app.js";

/** A listening HTTP server that feeds requests to an `HttpApp`. */
export interface HttpTransport {
  /** Starts listening; resolves with the bound address (port 0 picks a free port). */
  listen(host: string, port: number): Promise<{ host: string; port: number }>;
  /** Stops accepting connections and closes the open ones. */
  close(): Promise<void>;
}

export type HttpTransportFactory = (app: HttpApp) => HttpTransport;
