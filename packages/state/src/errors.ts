import { NodexError } from "@nodex/types";

export const StateErrorCode = {
  /** A state root whose trie nodes are not in the database (never written, or pruned). */
  ROOT_MISSING: "STATE_ROOT_MISSING",
} as const;
export type StateErrorCode = (typeof StateErrorCode)[keyof typeof StateErrorCode];

export class StateError extends NodexError<StateErrorCode> {
  constructor(code: StateErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "StateError";
  }
}
