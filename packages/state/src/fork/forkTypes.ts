import type { Database } from "../db/database.js";
import type { MissingNodeError } from "../missingNode.js";

/** Entries the store now holds, by its keys (trie nodes: hash hex; code: `63` and the hash). */
export type ForkEntries = ReadonlyMap<string, Uint8Array>;

/**
 * What a `NodeStore` asks of the fork source attached to it (`ForkSource`): each method
 * fetches, checks and writes to `db`, and returns what it wrote for the store's cache.
 */
export interface ForkFetcher {
  readonly db: Database;
  readonly stateRoot: Uint8Array;
  fill(
    owner: Uint8Array | undefined,
    key: Uint8Array | undefined,
    missing: MissingNodeError,
  ): Promise<ForkEntries>;
  fetchRoot(): Promise<ForkEntries>;
  fetchCode(address: Uint8Array, codeHash: Uint8Array): Promise<ForkEntries>;
}
