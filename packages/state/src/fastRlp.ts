import { RLP } from "@ethereumjs/rlp";
import { fastRlpInstalled, installFastRlp } from "@nodex/types";

/**
 * Gives the `RLP` object of the `@ethereumjs/rlp` copy that the trie, the state manager and
 * ethereumjs's accounts encode and decode through (a node or an account at a time) the
 * one-pass implementation of `@nodex/types`: the same bytes and the same errors, faster.
 *
 * It replaces that object's methods for the whole process, so it is a choice the program
 * makes at start-up (the node does), never a side effect of importing this package. The
 * workspace installs one copy of `@ethereumjs/rlp` 10 for all of them; a copy of its own that a
 * package brings keeps the library's code, and its answers are the same.
 */
export function useFastRlp(): void {
  installFastRlp(RLP);
}

/** Whether `useFastRlp` has run (in this thread). */
export function usingFastRlp(): boolean {
  return fastRlpInstalled(RLP);
}
