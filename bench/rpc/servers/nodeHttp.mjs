// Baseline: a minimal node:http JSON-RPC server (see common.mjs for the work it does).
import { createServer } from "node:http";
import {
  announce,
  dispatch,
  isJSONContentType,
  MAX_BODY_BYTES,
  onShutdown,
  portFromArgv,
} from "./common.mjs";

const port = portFromArgv();

const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST" }).end();
    req.resume();
    return;
  }
  if (!isJSONContentType(req.headers["content-type"])) {
    res.writeHead(415).end();
    req.resume();
    return;
  }
  const chunks = [];
  let size = 0;
  let tooLarge = false;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      if (!tooLarge) res.writeHead(413, { connection: "close" }).end(() => req.destroy());
      tooLarge = true;
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (tooLarge) return;
    const text =
      chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8");
    dispatch(text).then(
      (body) => {
        // setHeader + end(body) lets node:http add Content-Length; writeHead(200, headers)
        // followed by end(body) would send the body chunked (Transfer-Encoding: chunked).
        res.setHeader("content-type", "application/json");
        res.end(body);
      },
      () => res.writeHead(500).end(),
    );
  });
});

server.listen(port, "127.0.0.1", () => announce("node:http", port));
onShutdown(
  () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
);
