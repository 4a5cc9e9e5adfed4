import { createRequire } from "node:module";
import { RLP } from "@ethereumjs/rlp";
import { describe, expect, it } from "vitest";
import { useFastRlp, usingFastRlp } from "../../src/index.js";

/** The folder of the `@ethereumjs/rlp` copy that `from` (a module path) loads. */
function rlpCopyOf(from: string): string {
  const path = createRequire(from).resolve("@ethereumjs/rlp");
  return path.slice(0, path.lastIndexOf("/node_modules/@ethereumjs/rlp/") + 30);
}

describe("one-pass RLP on the trie", () => {
  it("is a choice: importing the package leaves ethereumjs's RLP alone", () => {
    expect(usingFastRlp()).toBe(false);
  });

  it("is installed by useFastRlp into the RLP object of the state's ethereumjs packages", () => {
    useFastRlp();
    expect(usingFastRlp()).toBe(true);
    const require = createRequire(import.meta.url);
    const ours = rlpCopyOf(import.meta.url);
    for (const user of ["@ethereumjs/mpt", "@ethereumjs/statemanager", "@ethereumjs/util"]) {
      expect(rlpCopyOf(require.resolve(user)), user).toBe(ours);
    }
    expect(RLP.decode(RLP.encode([new Uint8Array([1, 2]), []]))).toEqual([
      new Uint8Array([1, 2]),
      [],
    ]);
  });
});
