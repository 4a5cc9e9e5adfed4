// `npm start`: install and build what is needed, then run a regtest node on
// http://127.0.0.1:4444. Extra arguments go to nodex: `npm start -- --rpc-port 8545`.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const child = spawn(
  process.execPath,
  [join(root, "apps/node/bin/nodex.js"), "--regtest", ...process.argv.slice(2)],
  {
    stdio: "inherit",
  },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
