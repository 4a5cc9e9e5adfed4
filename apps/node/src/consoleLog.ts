import type { ConsoleLogSink } from "@nodex/evm";
import { bytesToHex, type Logger, type NetworkPreset } from "@nodex/types";

/** How many transactions' hashes the sink remembers, not to print a transaction twice. */
const REMEMBERED_TRANSACTIONS = 4096;

/**
 * Whether the network's executor prints what contracts log through Hardhat's `console.sol`:
 * on the development networks only (regtest, devnet), as Hardhat's node does.
 */
export function printsConsoleLog(network: NetworkPreset): boolean {
  return network.name === "regtest" || network.name === "devnet";
}

/** The executor's `consoleLog`, and how it learns that transactions left the chain. */
export interface ConsoleLogPrinter {
  readonly sink: ConsoleLogSink;
  /**
   * Transactions whose blocks left the canonical chain (a reorganization, `evm_revert`): when
   * they run again (the same signed transaction sent again after a revert, as test suites do),
   * their lines are printed again.
   */
  forget(hashes: readonly Uint8Array[]): void;
}

/**
 * The executor's `consoleLog`: each line at info as `console.log`, with the hash of the
 * transaction it came from (none for a call); a call whose input does not decode, at warn with
 * the note. A transaction runs more than once on its way into a block (a pending block or a
 * template, then the block mined): its lines are printed the first time only, until it leaves
 * the chain (`forget`).
 */
export function consoleLogPrinter(logger: Logger): ConsoleLogPrinter {
  const printed = new Set<string>();
  const sink: ConsoleLogSink = (lines, tx) => {
    let hash: string | undefined;
    if (tx !== undefined) {
      hash = bytesToHex(tx.hash);
      if (printed.has(hash)) return;
      printed.add(hash);
      if (printed.size > REMEMBERED_TRANSACTIONS)
        printed.delete(printed.values().next().value as string);
    }
    for (const line of lines) {
      const context = hash === undefined ? {} : { tx: hash };
      if (line.kind === "message") logger.info("console.log", { ...context, message: line.text });
      else logger.warn("console.log", { ...context, note: line.text });
    }
  };
  return {
    sink,
    forget: (hashes) => {
      for (const hash of hashes) printed.delete(bytesToHex(hash));
    },
  };
}
