import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const solc = require("solc") as { compile(input: string): string };

export interface Compiled {
  readonly abi: unknown[];
  readonly bytecode: string;
}

/** Compiles a test contract file (Cancun, optimizer on) and returns each contract's ABI and bytecode. */
export function compile(file: string): Record<string, Compiled> {
  const source = readFileSync(new URL(`../contracts/${file}`, import.meta.url), "utf8");
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: "Solidity",
        sources: { [file]: { content: source } },
        settings: {
          evmVersion: "cancun",
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
        },
      }),
    ),
  ) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<
      string,
      Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const out: Record<string, Compiled> = {};
  for (const [name, c] of Object.entries(output.contracts[file] ?? {})) {
    out[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  }
  return out;
}
