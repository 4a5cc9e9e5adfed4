// Candidate: uWebSockets.js (as published on npm) doing the same work as nodeHttp.mjs.
//   node uws.mjs --port P --pkg @trufflesuite/uws-js-unofficial | @btc-vision/uwebsockets.js
// `--probe` loads the package, prints {"loaded":…} as JSON and exits (used by run.mjs).
//
// The uWS rules this follows (break one and it crashes or corrupts memory):
//  - `req` (HttpRequest) is valid only until the handler returns: read every header first,
//    never after an await or in a later callback.
//  - `res` must have onAborted set before returning from the handler without answering;
//    after an abort, `res` must not be touched again.
//  - the ArrayBuffer given to onData is only valid during that call (it is neutered afterwards):
//    copy it if you keep it past the call.
//  - writes outside a uWS callback (after an await) must be inside res.cork(), otherwise each
//    writeStatus/writeHeader/end can become its own syscall (and uWS warns).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { announce, dispatch, isJSONContentType, MAX_BODY_BYTES, onShutdown } from "./common.mjs";

const argv = process.argv.slice(2);
const arg = (name) => {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
};
const pkg = arg("--pkg") ?? "@trufflesuite/uws-js-unofficial";
const require = createRequire(import.meta.url);

/** The package's version, read from disk (its exports map may hide package.json). */
function packageVersion() {
  let dir = dirname(require.resolve(pkg));
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, "utf8"));
      if (json.name === pkg) return json.version;
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Loads the package; tells whether the native addon loaded or a pure-JS fallback did. */
function load() {
  const before = new Set(Object.keys(require.cache));
  // @trufflesuite/uws-js-unofficial silently falls back to a JS (node:http + ws) implementation
  // when its addon does not load; it warns on stderr. Make that visible instead of benchmarking it.
  const warn = console.warn;
  const warnings = [];
  console.warn = (...a) => warnings.push(a.join(" "));
  try {
    const uWS = require(pkg);
    const added = Object.keys(require.cache).filter((k) => !before.has(k));
    const native = added.find((k) => k.endsWith(".node"));
    const version = packageVersion();
    return { uWS, version, native: native !== undefined, addon: native ?? null, warnings };
  } finally {
    console.warn = warn;
  }
}

if (argv.includes("--probe")) {
  try {
    const { version, native, addon, warnings } = load();
    process.stdout.write(
      `${JSON.stringify({ loaded: native, pkg, version, addon, error: native ? null : warnings.join("\n") || "no native addon loaded" })}\n`,
    );
  } catch (err) {
    let version = null;
    try {
      version = packageVersion();
    } catch {}
    process.stdout.write(
      `${JSON.stringify({ loaded: false, pkg, version, addon: null, error: String(err?.message ?? err) })}\n`,
    );
  }
  process.exit(0);
}

const port = Number(arg("--port"));
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write("usage: node uws.mjs --port P [--pkg NAME]\n");
  process.exit(2);
}

const { uWS, version, native, warnings } = load();
if (!native) {
  process.stderr.write(
    `${pkg}: the native uWS addon did not load, refusing to bench a fallback\n${warnings.join("\n")}\n`,
  );
  process.exit(1);
}

function reply(res, status, body) {
  res.cork(() => {
    res.writeStatus(status);
    if (body !== undefined) res.writeHeader("content-type", "application/json");
    res.end(body ?? "");
  });
}

const app = uWS.App();
app.post("/*", (res, req) => {
  // Headers first: `req` dies when this function returns.
  const contentType = req.getHeader("content-type");
  const state = { aborted: false };
  res.onAborted(() => {
    state.aborted = true;
  });
  if (!isJSONContentType(contentType)) {
    reply(res, "415 Unsupported Media Type");
    return;
  }
  let chunks;
  let size = 0;
  res.onData((ab, isLast) => {
    if (state.aborted || size < 0) return;
    size += ab.byteLength;
    if (size > MAX_BODY_BYTES) {
      size = -1;
      res.cork(() =>
        res.writeStatus("413 Payload Too Large").writeHeader("connection", "close").end(),
      );
      return;
    }
    let text;
    if (isLast && chunks === undefined) {
      // Single chunk: decode now, while `ab` is still valid; no copy needed.
      text = Buffer.from(ab).toString("utf8");
    } else {
      // Keep a copy: `ab` is neutered after this callback returns.
      chunks ??= [];
      chunks.push(Buffer.from(ab.slice(0)));
      if (!isLast) return;
      text = Buffer.concat(chunks).toString("utf8");
    }
    dispatch(text).then(
      (body) => {
        if (!state.aborted) reply(res, "200 OK", body);
      },
      () => {
        if (!state.aborted) reply(res, "500 Internal Server Error");
      },
    );
  });
});
app.any("/*", (res) => {
  res.cork(() => res.writeStatus("405 Method Not Allowed").writeHeader("allow", "POST").end());
});

let token;
app.listen("127.0.0.1", port, (t) => {
  if (!t) {
    process.stderr.write(`${pkg}: cannot listen on 127.0.0.1:${port}\n`);
    process.exit(1);
  }
  token = t;
  announce("uWS", port, `${pkg} ${version}`);
});
onShutdown(() => {
  if (token) uWS.us_listen_socket_close(token);
});
