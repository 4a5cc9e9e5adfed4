import { NodexError } from "@nodex/types";

export const StateErrorCode = {
  /** A state root whose trie nodes are not in the database (never written, or pruned). */
  ROOT_MISSING: "STATE_ROOT_MISSING",
  /**
   * The database takes no writes: a write failed (a full disk, an I/O error) or free space is
   * below the configured minimum. Reads still work; writes work again once a probe succeeds.
   */
  STORAGE_UNAVAILABLE: "STATE_STORAGE_UNAVAILABLE",
  /** A state dump to load that is not a complete state (a node or code missing or altered). */
  INVALID_DUMP: "STATE_INVALID_DUMP",
  /** The database cannot be opened: in use by another process, no permission, damaged. */
  OPEN_FAILED: "STATE_OPEN_FAILED",
} as const;
export type StateErrorCode = (typeof StateErrorCode)[keyof typeof StateErrorCode];

export class StateError extends NodexError<StateErrorCode> {
  constructor(
    code: StateErrorCode,
    message: string,
    meta: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, meta, options);
    this.name = "StateError";
  }
}
