import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hardfork } from "@ethereumjs/common";

/**
 * The version of `@ethereumjs/evm` the fast paths were verified on: the interpreter of calls
 * (`interpreter/`) reads the library's opcode table and gas parameters, and the patches
 * (`fastSteps.ts`, `fastOpcodes.ts`, `fastJournal.ts`, `jumpAnalysis.ts`, `common.ts`) replace
 * private members of its classes (`_executeCall`, `_runState`, the journal, …). The package pins
 * this version exactly; another one installed turns them all off.
 */
export const VERIFIED_EVM_VERSION = "10.1.3";

/**
 * The hardfork the fast paths and `intrinsicGas` were written for: their opcodes, gas rules and
 * intrinsic gas are Cancun's. An executor of another hardfork runs on the library alone.
 */
export const VERIFIED_HARDFORK: string = Hardfork.Cancun;

/** Whether an executor runs the fast paths, and why not when it does not. */
export type FastPathStatus =
  | { readonly on: true }
  | { readonly on: false; readonly reason: string };

let installed: string | undefined;

/** The version of the `@ethereumjs/evm` this package loads (its package.json, found from its entry). */
export function installedEvmVersion(): string {
  if (installed !== undefined) return installed;
  let dir = dirname(createRequire(import.meta.url).resolve("@ethereumjs/evm"));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "@ethereumjs/evm" && typeof pkg.version === "string") {
        installed = pkg.version;
        return installed;
      }
    } catch {}
    const up = dirname(dir);
    if (up === dir) {
      installed = "unknown";
      return installed;
    }
    dir = up;
  }
}

/**
 * Whether the fast paths may run for `hardfork` with the installed library (`version`, the
 * installed one unless given): both must be the ones they were verified on.
 */
export function fastPathStatus(hardfork: string, version = installedEvmVersion()): FastPathStatus {
  if (version !== VERIFIED_EVM_VERSION)
    return {
      on: false,
      reason: `@ethereumjs/evm ${version} is installed; the fast paths were verified on ${VERIFIED_EVM_VERSION}`,
    };
  if (hardfork !== VERIFIED_HARDFORK)
    return {
      on: false,
      reason: `the executor runs the ${hardfork} hardfork; the fast paths were verified for ${VERIFIED_HARDFORK}`,
    };
  return { on: true };
}
