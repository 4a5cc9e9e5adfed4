import { RLP } from "@ethereumjs/rlp";
import {
  type Address,
  bytesToBigintBE,
  bytesToUnprefixedHex,
  equalBytes,
  keccak256,
} from "@nodex/types";
import { EMPTY_TRIE_ROOT } from "./emptyTrie.js";
import { StateError, StateErrorCode } from "./errors.js";
import { decodeNode, findValue, type RawNode, type Ref, type Resolver } from "./fastTrie.js";
import { MissingNodeError, nodePosition } from "./missingNode.js";
import type { NodeStore } from "./nodeStore.js";
import { nibbles } from "./triePaths.js";
import type { AccountState } from "./worldState.js";

/**
 * The accounts of the state at one root, read straight from its trie: no state manager, no
 * caches of its own, nothing to open (a `WorldState` makes a trie, a state manager and its
 * caches, some 25 µs, for every state it opens). For readers that need only accounts, such as
 * the pool's checks of nonce and balance at each new head. The answers are a `WorldState`'s.
 */
export class AccountReader {
  readonly #store: NodeStore;
  readonly #root: Uint8Array;

  constructor(store: NodeStore, root: Uint8Array) {
    this.#store = store;
    this.#root = root;
  }

  /**
   * The account at `address`, `undefined` when the state has none; throws `StateError`
   * `STATE_ROOT_MISSING` when a node on its path is not in the database.
   */
  async getAccount(address: Address): Promise<AccountState | undefined> {
    if (equalBytes(this.#root, EMPTY_TRIE_ROOT)) return undefined;
    const resolve: Resolver = (ref, path, depth) => this.#resolve(ref, path, depth);
    const path = nibbles(keccak256(address));
    const filled = new Set<string>();
    for (;;) {
      try {
        const value = await findValue(await resolve(this.#root, path, 0), path, resolve);
        return value === null || value.length === 0 ? undefined : decodeAccount(value);
      } catch (error) {
        // With a fork source: the missing node fetched from the upstream, then read again.
        if (!(error instanceof MissingNodeError)) throw error;
        const hex = bytesToUnprefixedHex(error.hash);
        if (filled.has(hex))
          throw new StateError(
            StateErrorCode.FORK_NODE_UNAVAILABLE,
            `trie node ${hex} of the account trie is still missing after its fetch from the fork's upstream`,
            { node: hex },
          );
        filled.add(hex);
        await this.#store.fillFromFork(undefined, address, error);
      }
    }
  }

  /**
   * The node a child reference names (null for none), met at `depth` nibbles of `path`. A
   * missing node is `STATE_ROOT_MISSING`, or with a fork source attached to the store, a
   * `MissingNodeError` for `getAccount` to fetch.
   */
  async #resolve(ref: Ref, path: Uint8Array, depth: number): Promise<RawNode | null> {
    if (!(ref instanceof Uint8Array)) return ref;
    if (ref.length === 0) return null;
    const bytes = await this.#store.get(bytesToUnprefixedHex(ref));
    if (bytes === undefined) {
      if (this.#store.fork !== undefined)
        throw new MissingNodeError(ref, nodePosition(path, depth));
      const root = bytesToUnprefixedHex(this.#root);
      throw new StateError(
        StateErrorCode.ROOT_MISSING,
        `state root ${root} is not in the database`,
        {
          root,
        },
      );
    }
    return decodeNode(bytes);
  }
}

/** An account as the trie stores it: RLP of [nonce, balance, storageRoot, codeHash]. */
export function decodeAccount(value: Uint8Array): AccountState {
  const fields = RLP.decode(value);
  if (
    !Array.isArray(fields) ||
    fields.length !== 4 ||
    !fields.every((f) => f instanceof Uint8Array)
  )
    throw new Error("Invalid account");
  const [nonce, balance, storageRoot, codeHash] = fields as Uint8Array[];
  return {
    nonce: bytesToBigintBE(nonce!),
    balance: bytesToBigintBE(balance!),
    storageRoot: storageRoot!,
    codeHash: codeHash!,
  };
}
