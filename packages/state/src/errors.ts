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
  /** Every upstream URL of a fork failed for a call (transport, rate limit or bad answers). */
  UPSTREAM_UNAVAILABLE: "STATE_UPSTREAM_UNAVAILABLE",
  /** An upstream answered a call with a JSON-RPC error that is not a rate limit. */
  UPSTREAM_ERROR: "STATE_UPSTREAM_ERROR",
  /** The upstream client was closed before the call was answered. */
  UPSTREAM_CLOSED: "STATE_UPSTREAM_CLOSED",
  /** Options of the upstream client that cannot work (no URL, a bad URL, a rate of 0). */
  UPSTREAM_INVALID_OPTIONS: "STATE_UPSTREAM_INVALID_OPTIONS",
  /** A call that cannot be sent (no method name, parameters that are not JSON). */
  UPSTREAM_INVALID_CALL: "STATE_UPSTREAM_INVALID_CALL",
  /**
   * A fork's upstream answered with data that its proof does not tie to the fork block's state
   * root (or code whose hash is not the account's), or with a malformed answer. The message
   * names the upstream, the address or slot, and what differed; nothing of the answer is kept.
   */
  FORK_UNVERIFIED: "STATE_FORK_UNVERIFIED",
  /**
   * A node or code of a forked state that the upstream cannot give: a node still missing after
   * its fetch, a sibling node no key within the search bound leads to, code of a hash the fork
   * block's account does not have.
   */
  FORK_NODE_UNAVAILABLE: "STATE_FORK_NODE_UNAVAILABLE",
  /** A fork mode not supported yet (reading an upstream without proofs, `verify: false`). */
  FORK_UNSUPPORTED: "STATE_FORK_UNSUPPORTED",
  /**
   * A state sync called with arguments it cannot take: a root that is not 32 bytes, items that
   * are not the sync's, answers that are not byte arrays or more answers than items.
   */
  SYNC_INVALID: "STATE_SYNC_INVALID",
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
