import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const solc = require("solc") as { compile(input: string): string };

export interface Compiled {
  readonly abi: unknown[];
  readonly bytecode: `0x${string}`;
}

/** Compiles a contract of ../../contracts (Cancun, optimizer on) with the solc package. */
export function compile(file: string, contract: string): Compiled {
  const source = readFileSync(new URL(`../../contracts/${file}`, import.meta.url), "utf8");
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
    contracts?: Record<
      string,
      Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const found = output.contracts?.[file]?.[contract];
  if (found === undefined) throw new Error(`no contract ${contract} in ${file}`);
  return { abi: found.abi, bytecode: `0x${found.evm.bytecode.object}` };
}
