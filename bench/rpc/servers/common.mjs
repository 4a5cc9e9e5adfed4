// Shared by the candidate servers: the JSON-RPC work each HTTP layer wraps, argv parsing
// and lifecycle. Every candidate does the same work per HTTP request:
//   read the whole body -> JSON.parse -> answer each request object -> JSON.stringify,
// behind one `await` (as a real async dispatcher would), with Content-Type application/json.

export const CHAIN_ID = "0x21";
export const MAX_BODY_BYTES = 5 * 1024 * 1024;

const PARSE_ERROR = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';

function answerOne(req) {
  const id = req !== null && typeof req === "object" && "id" in req ? req.id : null;
  return { jsonrpc: "2.0", id, result: CHAIN_ID };
}

/** Body text in, response body text out. Array in, array out. */
export async function dispatch(text) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    return PARSE_ERROR;
  }
  const out = Array.isArray(parsed) ? parsed.map(answerOne) : answerOne(parsed);
  return JSON.stringify(out);
}

export function isJSONContentType(value) {
  if (value === undefined || value === "") return false;
  return value.split(";", 1)[0].trim().toLowerCase() === "application/json";
}

/** `--port P` (required) from argv. */
export function portFromArgv(argv = process.argv.slice(2)) {
  const i = argv.indexOf("--port");
  const port = i === -1 ? Number.NaN : Number(argv[i + 1]);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    process.stderr.write("usage: node <server>.mjs --port P\n");
    process.exit(2);
  }
  return port;
}

/**
 * Stops the server on SIGTERM/SIGINT, and also when the parent bench process goes away
 * (its end of our stdin pipe closes), so a killed bench leaves no server behind.
 */
export function onShutdown(close) {
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    Promise.resolve()
      .then(close)
      .finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  if (!process.stdin.isTTY) {
    process.stdin.on("end", stop);
    process.stdin.on("error", stop);
    process.stdin.resume();
  }
}

/** The line the bench waits for is not needed (it polls eth_chainId), but helps when run by hand. */
export function announce(name, port, extra = "") {
  process.stdout.write(
    `${name} listening on http://127.0.0.1:${port}${extra ? ` (${extra})` : ""}\n`,
  );
}
