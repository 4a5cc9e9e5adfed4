import type { ModuleDefinition } from "../registry.js";
import { eth } from "./eth.js";
import { net } from "./net.js";
import { nodex } from "./nodex.js";
import { web3 } from "./web3.js";

/** Every module with methods, except `rpc`, which the server builds because it reports on the others. */
export const builtinModules: readonly ModuleDefinition[] = [web3, net, eth, nodex];
