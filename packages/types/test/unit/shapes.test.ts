import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The built package, in a child process that may ask V8 about hidden classes (natives syntax).
const dist = new URL("../../dist/index.js", import.meta.url).href;

/** Runs `body` as a module with `@nodex/types` as `t`; returns what it printed. */
function inV8(body: string): string {
  const script = `import * as t from ${JSON.stringify(dist)};\n${body}`;
  const res = spawnSync(
    process.execPath,
    ["--allow-natives-syntax", "--input-type=module", "-e", script],
    { encoding: "utf8", cwd: fileURLToPath(new URL(".", import.meta.url)) },
  );
  if (res.status !== 0) throw new Error(res.stderr);
  return res.stdout.trim();
}

describe("object shapes", () => {
  it("gives every transaction one hidden class: signed here, decoded, recovered again or not", () => {
    // On V8 11 (Node 20) an object spread followed by more fields made a hidden class per
    // transaction, and every read of a transaction's fields a slow lookup.
    const out = inV8(`
      const [a, b] = t.deriveDevAccounts();
      const tx = (nonce, to) => ({ nonce, gasPrice: 1n, gasLimit: 21000n, to, value: 5n, data: new Uint8Array() });
      // Enough of each for V8's inline caches to settle: the first few once shared one.
      const signed = [];
      for (let i = 0; i < 30; i++) {
        signed.push(t.signTransaction(tx(BigInt(i), i % 3 === 0 ? null : b.address), a.privateKey, 33));
        signed.push(t.signTransaction(tx(BigInt(i), a.address), b.privateKey, 31));
      }
      t.clearSenderCache();
      const all = [
        ...signed,
        ...signed.map((s) => t.decodeTransaction(s.raw)),
        ...signed.map((s) => t.decodeTransaction(s.raw)),
        ...signed.map((s) => t.decodeTransaction(s.raw, s.from)),
      ];
      console.log(all.every((x) => %HaveSameMap(x, all[0])));
    `);
    expect(out).toBe("true");
  });
});
