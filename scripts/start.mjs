// `npm start`: install and build what is needed, then run a regtest node on
// http://127.0.0.1:4444. Extra arguments go to nodex: `npm start -- --rpc-port 8545`.
// The node runs in this process, so Ctrl-C and SIGTERM reach it directly.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const main = join(root, "apps/node/dist/main.js");
process.argv = [process.argv[0], main, "--regtest", ...process.argv.slice(2)];
await import(pathToFileURL(main).href);
