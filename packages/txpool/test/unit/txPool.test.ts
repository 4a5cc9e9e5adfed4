import { bytesToHex } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TxPool, TxPoolError, TxPoolErrorCode } from "../../src/index.js";
import { CHAIN_ID, head, nonces, richState, sender, transfer } from "./helpers.js";

describe("nonce gaps", () => {
  it("queues after a gap and promotes in order when the gap fills out of order", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    expect((await pool.add(transfer(0, 3), h)).status).toBe("queued");
    expect((await pool.add(transfer(0, 1), h)).status).toBe("queued");
    expect((await pool.add(transfer(0, 4), h)).status).toBe("queued");
    expect(pool.status()).toEqual({ pending: 0, queued: 3 });
    expect(pool.pending()).toEqual([]);
    expect(pool.pendingNonce(sender(0), 0n)).toBe(0n);

    expect((await pool.add(transfer(0, 0), h)).status).toBe("pending");
    expect(nonces(pool.pending())).toEqual([0n, 1n]);
    expect(pool.get(transfer(0, 3).hash)?.status).toBe("queued");

    expect((await pool.add(transfer(0, 2), h)).status).toBe("pending");
    expect(nonces(pool.pending())).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(pool.status()).toEqual({ pending: 5, queued: 0 });
    expect(pool.pendingNonce(sender(0), 0n)).toBe(5n);

    const { pending, queued } = pool.content();
    expect(nonces(pending.get(bytesToHex(sender(0)))!)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(queued.size).toBe(0);
  });
});

describe("version", () => {
  it("moves with every change of the content, and only then", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    const seen = [pool.version];
    const moved = () => {
      const v = pool.version;
      const changed = v !== seen[seen.length - 1];
      seen.push(v);
      return changed;
    };
    await pool.add(transfer(0, 1), h);
    expect(moved()).toBe(true); // queued
    pool.pending();
    pool.content();
    pool.get(transfer(0, 1).hash);
    expect(moved()).toBe(false); // reads change nothing
    await pool.add(transfer(0, 0), h);
    expect(moved()).toBe(true); // pending, and the queued one promoted
    pool.remove([transfer(0, 0).hash]);
    expect(moved()).toBe(true);
    pool.clear();
    expect(moved()).toBe(true);
  });
});

describe("replacement", () => {
  it("replaces with a gas price at least 40% higher (the reference's bump), keeping the status", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    await pool.add(transfer(0, 0, 100n), h);
    await pool.add(transfer(0, 5, 100n), h);

    const low = await pool.add(transfer(0, 0, 139n), h).catch((e: unknown) => e);
    expect(low).toBeInstanceOf(TxPoolError);
    expect((low as TxPoolError).code).toBe(TxPoolErrorCode.REPLACEMENT_UNDERPRICED);
    expect((low as TxPoolError).message).toBe(
      `gas price not enough to bump transaction: address ${bytesToHex(sender(0))}, nonce 0, gas price 139, replaces 100, needs at least 140 (40% more)`,
    );

    const pending = await pool.add(transfer(0, 0, 140n), h);
    expect(pending).toEqual({ status: "pending", replaced: transfer(0, 0, 100n) });
    expect(pool.get(transfer(0, 0, 100n).hash)).toBeUndefined();
    expect(pool.pending()).toEqual([transfer(0, 0, 140n)]);

    const queued = await pool.add(transfer(0, 5, 200n), h);
    expect(queued).toEqual({ status: "queued", replaced: transfer(0, 5, 100n) });
    expect(pool.status()).toEqual({ pending: 1, queued: 1 });
  });

  it("needs a strictly higher price even where 40% rounds to nothing", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1), { minimumGasPrice: 0n });
    await pool.add(transfer(0, 0, 1n), h);
    await expect(pool.add(transfer(0, 0, 1n, { value: 2n }), h)).rejects.toThrow(
      /needs at least 2 \(40% more\)/,
    );
    expect((await pool.add(transfer(0, 0, 2n), h)).replaced).toBeDefined();
  });

  it("follows priceBumpPercent", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID, priceBumpPercent: 10 });
    const h = head(richState(1));
    await pool.add(transfer(0, 0, 100n), h);
    await expect(pool.add(transfer(0, 0, 109n), h)).rejects.toThrow(
      /needs at least 110 \(10% more\)/,
    );
    expect((await pool.add(transfer(0, 0, 110n), h)).status).toBe("pending");
  });
});

describe("pending()", () => {
  it("interleaves senders by price, each sender in nonce order", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(3));
    // Sender 0: 5, 50; sender 1: 30, 30; sender 2: 10.
    await pool.add(transfer(0, 1, 50n), h);
    await pool.add(transfer(0, 0, 5n), h);
    await pool.add(transfer(1, 0, 30n), h);
    await pool.add(transfer(1, 1, 30n), h);
    await pool.add(transfer(2, 0, 10n), h);
    expect(pool.pending()).toEqual([
      transfer(1, 0, 30n),
      transfer(1, 1, 30n),
      transfer(2, 0, 10n),
      transfer(0, 0, 5n),
      transfer(0, 1, 50n),
    ]);
  });

  it("breaks price ties by arrival", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(2));
    await pool.add(transfer(1, 0, 7n), h);
    await pool.add(transfer(0, 0, 7n), h);
    expect(pool.pending()).toEqual([transfer(1, 0, 7n), transfer(0, 0, 7n)]);
  });

  it("property: every prefix is executable nonce-wise and the best head goes first", async () => {
    const SENDERS = 4;
    const NONCES = 5;
    const plan = fc
      .uniqueArray(
        fc.record({
          s: fc.integer({ min: 0, max: SENDERS - 1 }),
          n: fc.integer({ min: 0, max: NONCES - 1 }),
          price: fc.integer({ min: 1, max: 4 }),
        }),
        { selector: (x) => `${x.s}/${x.n}`, maxLength: SENDERS * NONCES },
      )
      .chain((txs) => fc.shuffledSubarray(txs, { minLength: txs.length, maxLength: txs.length }));
    const startNonce = fc.array(fc.integer({ min: 0, max: 1 }), {
      minLength: SENDERS,
      maxLength: SENDERS,
    });
    await fc.assert(
      fc.asyncProperty(plan, startNonce, async (txs, starts) => {
        const state = richState(SENDERS);
        for (let s = 0; s < SENDERS; s++) state.set(sender(s), { nonce: BigInt(starts[s]!) });
        const pool = new TxPool({ chainId: CHAIN_ID });
        const h = head(state);
        for (const { s, n, price } of txs) {
          await pool.add(transfer(s, n, BigInt(price)), h).catch((e: unknown) => {
            if ((e as TxPoolError).code !== TxPoolErrorCode.NONCE_TOO_LOW) throw e;
          });
        }
        const out = pool.pending();
        // Expected pending: per sender, the run of nonces from its start without a gap.
        const present = new Set(txs.map((t) => `${t.s}/${t.n}`));
        let expected = 0;
        for (let s = 0; s < SENDERS; s++) {
          for (let n = starts[s]!; present.has(`${s}/${n}`); n++) expected++;
        }
        expect(out.length).toBe(expected);
        expect(pool.status().pending).toBe(expected);
        // Every prefix executable: each sender's transactions come in nonce order from its start.
        const next = new Map<string, bigint>();
        const price = new Map(txs.map((t) => [`${t.s}/${t.n}`, BigInt(t.price)]));
        for (let i = 0; i < out.length; i++) {
          const tx = out[i]!;
          const from = bytesToHex(tx.from);
          const s = [...Array(SENDERS).keys()].find((k) => bytesToHex(sender(k)) === from)!;
          expect(tx.nonce).toBe(next.get(from) ?? BigInt(starts[s]!));
          next.set(from, tx.nonce + 1n);
          // The chosen one pays at least as much as every other sender's next transaction.
          for (let k = 0; k < SENDERS; k++) {
            const other = bytesToHex(sender(k));
            if (other === from) continue;
            const nonce = next.get(other) ?? BigInt(starts[k]!);
            const p = price.get(`${k}/${nonce}`);
            const stillPending = out.slice(i + 1).some((t) => bytesToHex(t.from) === other);
            if (p !== undefined && stillPending) expect(tx.gasPrice).toBeGreaterThanOrEqual(p);
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("pendingNonce", () => {
  it("counts the pending run from the state nonce given", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(2));
    await pool.add(transfer(0, 0), h);
    await pool.add(transfer(0, 1), h);
    await pool.add(transfer(0, 3), h);
    expect(pool.pendingNonce(sender(0), 0n)).toBe(2n);
    expect(pool.pendingNonce(sender(0), 1n)).toBe(2n);
    expect(pool.pendingNonce(sender(1), 7n)).toBe(7n);
  });
});

describe("remove and clear", () => {
  it("removes mined transactions; the rest stay pending", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    for (let n = 0; n < 4; n++) await pool.add(transfer(0, n), h);
    pool.remove([transfer(0, 1).hash, transfer(0, 0).hash, new Uint8Array(32)]);
    expect(nonces(pool.pending())).toEqual([2n, 3n]);
    expect(pool.pendingNonce(sender(0), 2n)).toBe(4n);
    expect(pool.status()).toEqual({ pending: 2, queued: 0 });
  });

  it("demotes what follows a gap left by a removal in the middle", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    for (let n = 0; n < 4; n++) await pool.add(transfer(0, n), h);
    pool.remove([transfer(0, 2).hash]);
    expect(nonces(pool.pending())).toEqual([0n, 1n]);
    expect(pool.status()).toEqual({ pending: 2, queued: 1 });
  });

  it("clears everything", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const h = head(richState(1));
    await pool.add(transfer(0, 0), h);
    await pool.add(transfer(0, 2), h);
    pool.clear();
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    expect(pool.get(transfer(0, 0).hash)).toBeUndefined();
    expect((await pool.add(transfer(0, 0), h)).status).toBe("pending");
  });
});
