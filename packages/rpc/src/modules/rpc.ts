import { defineModule, method } from "../registry.js";
import { r } from "../results.js";

/** Filled in by the server once it knows which modules it serves. */
export interface ModulesReport {
  readonly [module: string]: string;
}

/** `rpc_modules`: the enabled modules and their versions, as geth and the reference node answer. */
export function rpcModule(report: () => ModulesReport) {
  return defineModule("rpc", {
    modules: method({
      params: [],
      result: r.json,
      handler: () => report(),
    }),
  });
}
