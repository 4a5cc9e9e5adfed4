import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type HttpAppDeps, healthReply, readyReply } from "./http/app.js";
import type { NodeMetrics } from "./metrics.js";

/** The operator's listener: `/metrics` for Prometheus, `/health` and `/ready` for balancers. */
export interface MetricsServer {
  listen(host: string, port: number): Promise<{ host: string; port: number }>;
  close(): Promise<void>;
}

/**
 * A plain node:http server apart from the JSON-RPC listener (`--metrics-addr`), so that
 * scrapes neither need an API key nor reach the users' port. `GET` (and `HEAD`) only.
 */
export function createMetricsServer(
  metrics: NodeMetrics,
  probes: Pick<HttpAppDeps, "health" | "readiness">,
): MetricsServer {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    serve(metrics, probes, req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, "text/plain", `metrics failed: ${String(err)}\n`);
      else res.destroy();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const addr = server.address() as AddressInfo;
          resolve({ host: addr.address, port: addr.port });
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

async function serve(
  metrics: NodeMetrics,
  probes: Pick<HttpAppDeps, "health" | "readiness">,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  req.resume();
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    reply(res, 405, "text/plain", `method ${req.method} is not allowed: use GET\n`);
    return;
  }
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  switch (path) {
    case "/metrics":
      reply(res, 200, metrics.contentType, await metrics.render());
      return;
    case "/health": {
      const probe = healthReply(probes);
      reply(res, probe.status, "application/json", probe.body);
      return;
    }
    case "/ready": {
      const probe = readyReply(probes);
      reply(res, probe.status, "application/json", probe.body);
      return;
    }
    default:
      reply(
        res,
        404,
        "text/plain",
        "not found: this listener serves /metrics, /health and /ready\n",
      );
  }
}

function reply(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    "content-type": type,
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}
