import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ecrecover as utilEcrecover } from "@ethereumjs/util";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bigintToBytesBE,
  bytesToHex,
  hexToBytes,
  keccak256,
  NETWORKS,
  SignatureRecoveryBackend,
  selectSignatureRecovery,
} from "@nodex/types";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ecrecover } from "../../src/ecrecover.js";
import { type BlockContext, Executor } from "../../src/index.js";

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const ECRECOVER = hexToBytes("0x0000000000000000000000000000000000000001") as Address;
const BLOCK: BlockContext = {
  number: 1n,
  timestamp: 1_700_000_000n,
  coinbase: hexToBytes("0x00000000000000000000000000000000000000cb") as Address,
  gasLimit: 10_000_000n,
  difficulty: 1n,
  minimumGasPrice: 1n,
};

/** Deterministic 32-byte words: keccak of a counter. */
const word = (i: number, salt: number) => keccak256(new Uint8Array([salt, i >> 16, i >> 8, i]));

/** Inputs for the hook: random r and s (high s half the time), edges, and every v the precompile passes. */
function inputs(count: number) {
  const out: { hash: Uint8Array; v: bigint; r: Uint8Array; s: Uint8Array }[] = [];
  for (let i = 0; i < count; i++) {
    let r = word(i, 1);
    let s = word(i, 2);
    const edge = i % 10;
    if (edge === 1) r = new Uint8Array(32);
    if (edge === 2) s = bigintToBytesBE(N, 32);
    if (edge === 3) r = bigintToBytesBE(N + 1n, 32);
    out.push({
      hash: word(i, 3),
      v: edge === 4 ? 29n : edge === 5 ? 0n : 27n + BigInt(i % 2),
      r,
      s,
    });
  }
  return out;
}

/** Platforms the secp256k1 package ships prebuilds for; noble alone elsewhere. */
const BACKENDS = ["linux-x64", "darwin-arm64", "win32-x64"].includes(
  `${process.platform}-${process.arch}`,
)
  ? [SignatureRecoveryBackend.LIBSECP256K1, SignatureRecoveryBackend.NOBLE]
  : [SignatureRecoveryBackend.NOBLE];

afterAll(() => {
  selectSignatureRecovery("auto");
});

describe("customCrypto.ecrecover", () => {
  it.each(BACKENDS)("answers as @ethereumjs/util's ecrecover (%s)", (backend) => {
    expect(selectSignatureRecovery(backend === "noble" ? "noble" : "auto").backend).toBe(backend);
    let recovered = 0;
    for (const { hash, v, r, s } of inputs(400)) {
      let expected: string;
      try {
        expected = bytesToHex(utilEcrecover(hash, v, r, s));
      } catch {
        expected = "refused";
      }
      let got: string;
      try {
        got = bytesToHex(ecrecover(hash, v, r, s));
        recovered++;
      } catch {
        got = "refused";
      }
      expect(got).toBe(expected);
    }
    expect(recovered).toBeGreaterThan(100);
  });
});

describe("the ECRECOVER precompile", () => {
  let dir: string;
  let db: Database;
  let state: WorldState;
  const executor = new Executor(NETWORKS.regtest);
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "nodex-ecrecover-"));
    db = await Database.open(join(dir, "db"));
    state = await WorldState.open(new NodeStore(db));
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(BACKENDS)("gives the same addresses on %s", async (backend) => {
    selectSignatureRecovery(backend === "noble" ? "noble" : "auto");
    const answers: string[] = [];
    for (const { hash, v, r, s } of inputs(40)) {
      const data = new Uint8Array(128);
      data.set(hash);
      data.set(bigintToBytesBE(v, 32), 32);
      data.set(r, 64);
      data.set(s, 96);
      const out = await executor.call(state, { to: ECRECOVER, data }, BLOCK);
      expect(out.success).toBe(true);
      let expected = "0x";
      // The precompile takes v = 27 or 28 only (the hook alone also takes 0 and 1).
      try {
        if (v !== 27n && v !== 28n) throw new Error("v");
        expected = bytesToHex(
          new Uint8Array([
            ...new Uint8Array(12),
            ...keccak256(utilEcrecover(hash, v, r, s)).slice(12),
          ]),
        );
      } catch {}
      expect(bytesToHex(out.returnValue)).toBe(expected);
      answers.push(expected);
    }
    expect(answers.filter((a) => a !== "0x").length).toBeGreaterThan(10);
  });
});
