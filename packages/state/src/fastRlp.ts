import { RLP } from "@ethereumjs/rlp";
import { installFastRlp } from "@nodex/types";

/**
 * The trie, the state manager and ethereumjs's accounts encode and decode through the `RLP`
 * object of `@ethereumjs/rlp`, a node or an account at a time: it gets the one-pass
 * implementation of `@nodex/types`, which gives the same bytes and the same errors. The
 * workspace installs one copy of `@ethereumjs/rlp` 10 for all of them; a copy of its own that
 * a package brings keeps the library's code, and its answers are the same.
 */
installFastRlp(RLP);
