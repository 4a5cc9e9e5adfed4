import { secp256k1 } from "@noble/curves/secp256k1.js";
import { afterAll, describe, expect, it } from "vitest";
import {
  bigintToBytes,
  bigintToBytesBE,
  bytesToBigintBE,
  clearSenderCache,
  decodeTransaction,
  deriveDevAccounts,
  recoverPublicKey,
  rlpEncode,
  SignatureRecoveryBackend,
  selectSignatureRecovery,
  signatureRecovery,
  signTransaction,
  TransactionError,
} from "../../src/index.js";

const { LIBSECP256K1, NOBLE } = SignatureRecoveryBackend;
const N = secp256k1.Point.CURVE().n;
const P = secp256k1.Point.CURVE().p;

/**
 * Cases of the differential test: 20,000 in the default suite (about 15 s, noble's share);
 * `NODEX_SECP256K1_CASES=100000` for the full run.
 */
const CASES = Number(process.env.NODEX_SECP256K1_CASES ?? 20_000);

const native = selectSignatureRecovery("auto");
/** Platforms the secp256k1 package ships prebuilds for: the native backend must load there. */
const PREBUILT = ["linux-x64", "darwin-arm64", "win32-x64"].includes(
  `${process.platform}-${process.arch}`,
);
afterAll(() => {
  selectSignatureRecovery("auto");
});

/** xorshift32, seeded: the same cases on every run. */
function generator(seed: number) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  return {
    int: (below: number) => next() % below,
    bytes(length: number): Uint8Array {
      const out = new Uint8Array(length);
      for (let i = 0; i < length; i += 4) {
        const w = next();
        out[i] = w;
        if (i + 1 < length) out[i + 1] = w >>> 8;
        if (i + 2 < length) out[i + 2] = w >>> 16;
        if (i + 3 < length) out[i + 3] = w >>> 24;
      }
      return out;
    },
  };
}

function compact(r: bigint, s: bigint): Uint8Array {
  const out = new Uint8Array(64);
  out.set(bigintToBytesBE(r, 32));
  out.set(bigintToBytesBE(s, 32), 32);
  return out;
}

interface Case {
  readonly hash: Uint8Array;
  readonly signature: Uint8Array;
  readonly recovery: number;
}

/**
 * Random (hash, r ‖ s, recovery) triples: a random r is the x of a curve point about half the
 * time, so about half recover (a valid signature of the key they give) and half don't; s is in
 * the upper half one time in two. Every eighth case is an edge: r or s zero, n, above n, n - 1,
 * tiny, r above p, a zero hash, a recovery id other than 0 and 1.
 */
function cases(count: number, seed: number): Case[] {
  const g = generator(seed);
  const out: Case[] = [];
  for (let i = 0; i < count; i++) {
    const hash = g.int(64) === 0 ? new Uint8Array(32) : g.bytes(32);
    let signature = g.bytes(64);
    let recovery = g.int(2);
    if (i % 8 === 7) {
      const r = bytesToBigintBE(signature.subarray(0, 32));
      const s = bytesToBigintBE(signature.subarray(32));
      const edge = g.int(12);
      if (edge === 0) signature = compact(0n, s % N);
      else if (edge === 1) signature = compact(r % N, 0n);
      else if (edge === 2) signature = compact(N, s % N);
      else if (edge === 3) signature = compact(r % N, N);
      else if (edge === 4) signature = compact(N + (r % (2n ** 256n - N)), s % N);
      else if (edge === 5) signature = compact(r % N, N + (s % (2n ** 256n - N)));
      else if (edge === 6) signature = compact(N - 1n, N - 1n);
      else if (edge === 7) signature = compact(BigInt(1 + g.int(8)), BigInt(1 + g.int(8)));
      else if (edge === 8) signature = compact(P - 1n - BigInt(g.int(1000)), s % N);
      else if (edge === 9) recovery = 2 + g.int(254);
      else if (edge === 10) signature = compact(r % N, N - 1n - BigInt(g.int(1000)));
      else signature = compact(r % N, (N >> 1n) + BigInt(g.int(3)));
    }
    out.push({ hash, signature, recovery });
  }
  return out;
}

/** r, s and a hash whose recovery is the point at infinity: R = kG, h = s·k mod n. */
function infinityCase(k: bigint, s: bigint): Case {
  const R = secp256k1.Point.BASE.multiply(k).toAffine();
  const hash = bigintToBytesBE((s * k) % N, 32);
  return { hash, signature: compact(R.x, s), recovery: Number(R.y & 1n) };
}

function isCurveX(x: bigint): boolean {
  try {
    secp256k1.Point.fromBytes(Uint8Array.from([2, ...bigintToBytesBE(x, 32)]));
    return true;
  } catch {
    return false;
  }
}

function runAll(list: readonly Case[], backend: SignatureRecoveryBackend) {
  return list.map((c) => recoverPublicKey(c.hash, c.signature, c.recovery, backend));
}

describe.runIf(PREBUILT)("signature recovery backends", () => {
  it("loads libsecp256k1 here (the addon ships prebuilds for linux-x64)", () => {
    expect(native).toEqual({ backend: LIBSECP256K1 });
  });

  it(
    `give the same key, or both refuse, on ${CASES} random and edge signatures`,
    () => {
      const list = cases(CASES, 0x5ec9256b);
      const fromNative = runAll(list, LIBSECP256K1);
      const fromNoble = runAll(list, NOBLE);
      let recovered = 0;
      let highS = 0;
      const differ: number[] = [];
      for (let i = 0; i < list.length; i++) {
        const a = fromNative[i];
        const b = fromNoble[i];
        const same =
          a === undefined ? b === undefined : b !== undefined && Buffer.from(a).equals(b);
        if (!same) differ.push(i);
        if (a !== undefined) {
          recovered++;
          if (bytesToBigintBE(list[i]!.signature.subarray(32)) > N >> 1n) highS++;
        }
      }
      expect(differ.slice(0, 5).map((i) => list[i])).toEqual([]);
      // Both halves are large: the comparison covers keys as well as refusals, high s included.
      expect(recovered).toBeGreaterThan(CASES * 0.35);
      expect(recovered).toBeLessThan(CASES * 0.65);
      expect(highS).toBeGreaterThan(recovered * 0.3);
    },
    Math.max(120_000, CASES * 4),
  );

  it("refuse a point at infinity, and other recovery ids, on both", () => {
    for (const backend of [LIBSECP256K1, NOBLE]) {
      for (const k of [1n, 2n, 12345n, N - 1n]) {
        const c = infinityCase(k, 7n);
        expect(recoverPublicKey(c.hash, c.signature, c.recovery, backend)).toBeUndefined();
        // The same r and s with another hash recover a key: the refusal is the infinity's.
        const other = bigintToBytesBE((7n * k + 1n) % N, 32);
        expect(recoverPublicKey(other, c.signature, c.recovery, backend)).toHaveLength(64);
        expect(recoverPublicKey(other, c.signature, 2, backend)).toBeUndefined();
        expect(recoverPublicKey(other.subarray(1), c.signature, c.recovery, backend)).toBe(
          undefined,
        );
      }
    }
  });
});

describe("transactions on either backend", () => {
  const [alice] = deriveDevAccounts();
  const signed = Array.from({ length: 20 }, (_, i) =>
    signTransaction(
      {
        nonce: BigInt(i),
        gasPrice: 1n,
        gasLimit: 21_000n,
        to: null,
        value: BigInt(i),
        data: new Uint8Array([i]),
      },
      alice!.privateKey,
      33,
    ),
  );

  /** The same transaction with s replaced by n - s and v flipped: the same sender, high s. */
  const highS = (raw: Uint8Array) => {
    const tx = decodeTransaction(raw);
    return rlpEncode([
      bigintToBytes(tx.nonce),
      bigintToBytes(tx.gasPrice),
      bigintToBytes(tx.gasLimit),
      tx.to ?? new Uint8Array(),
      bigintToBytes(tx.value),
      tx.data,
      bigintToBytes(tx.v % 2n === 0n ? tx.v - 1n : tx.v + 1n),
      bigintToBytes(tx.r),
      bigintToBytes(N - tx.s),
    ]);
  };

  it.each(PREBUILT ? [LIBSECP256K1, NOBLE] : [NOBLE])(
    "recover the sender and refuse high s (%s)",
    (backend) => {
      expect(selectSignatureRecovery(backend === NOBLE ? "noble" : "auto").backend).toBe(backend);
      expect(signatureRecovery().backend).toBe(backend);
      // Senders recovered by the other backend's run would come from the cache.
      clearSenderCache();
      for (const tx of signed) {
        expect(decodeTransaction(tx.raw).from).toEqual(alice!.address);
        expect(() => decodeTransaction(highS(tx.raw))).toThrow(
          new TransactionError(
            "TX_INVALID_SIGNATURE",
            "invalid transaction signature: s is in the upper half of the curve order (EIP-2)",
          ),
        );
      }
      // r replaced by the smallest value that is no curve point's x.
      let x = 1n;
      while (isCurveX(x)) x++;
      const tx = decodeTransaction(signed[0]!.raw);
      const bad = rlpEncode([
        bigintToBytes(tx.nonce),
        bigintToBytes(tx.gasPrice),
        bigintToBytes(tx.gasLimit),
        new Uint8Array(),
        bigintToBytes(tx.value),
        tx.data,
        bigintToBytes(tx.v),
        bigintToBytes(x),
        bigintToBytes(tx.s),
      ]);
      expect(() => decodeTransaction(bad)).toThrow(
        new TransactionError(
          "TX_INVALID_SIGNATURE",
          "invalid transaction signature: no public key recovers from it",
        ),
      );
    },
  );

  it("say why noble when noble was asked for", () => {
    expect(selectSignatureRecovery("noble")).toEqual({
      backend: NOBLE,
      reason: "noble was asked for",
    });
  });
});

describe("the cache of recovered senders", () => {
  it("gives each decode of a transaction its own copy of the sender recovered once", () => {
    clearSenderCache();
    const [alice] = deriveDevAccounts();
    const tx = (nonce: number) =>
      signTransaction(
        {
          nonce: BigInt(nonce),
          gasPrice: 1n,
          gasLimit: 21_000n,
          to: null,
          value: 0n,
          data: new Uint8Array(),
        },
        alice!.privateKey,
        33,
      );
    const first = tx(0);
    const a = decodeTransaction(first.raw);
    const b = decodeTransaction(first.raw);
    expect(b.from).toEqual(alice!.address);
    expect(b.from).not.toBe(a.from);
    b.from.fill(0);
    expect(decodeTransaction(first.raw).from).toEqual(alice!.address);
    expect(decodeTransaction(tx(1).raw).from).toEqual(alice!.address);
  });
});
