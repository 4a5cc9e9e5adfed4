import { bytesToHex } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { TxPool, TxPoolError, TxPoolErrorCode, type TxPoolOptions } from "../../src/index.js";
import { CHAIN_ID, head, nonces, richState, sender, transfer } from "./helpers.js";

function pool(opts: Partial<TxPoolOptions>): TxPool {
  return new TxPool({ chainId: CHAIN_ID, ...opts });
}

async function code(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TxPoolError);
  return (err as TxPoolError).code;
}

describe("per-sender limits", () => {
  it("refuses a pending transaction beyond accountSlots", async () => {
    const p = pool({ accountSlots: 2 });
    const h = head(richState(1));
    await p.add(transfer(0, 0), h);
    await p.add(transfer(0, 1), h);
    const err = await p.add(transfer(0, 2), h).catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.ACCOUNT_SLOTS_FULL);
    expect((err as TxPoolError).message).toBe(
      `transaction pool is full: address ${bytesToHex(sender(0))} has 2 pending transactions (accountSlots 2)`,
    );
  });

  it("a transaction that continues the run but finds no pending slot is refused, not queued", async () => {
    const p = pool({ accountSlots: 1 });
    const h = head(richState(1));
    await p.add(transfer(0, 0), h);
    await p.add(transfer(0, 2), h);
    expect(await code(p.add(transfer(0, 1), h))).toBe(TxPoolErrorCode.ACCOUNT_SLOTS_FULL);
    expect(p.status()).toEqual({ pending: 1, queued: 1 });
  });

  it("refuses a queued transaction beyond accountQueue (reachable after a revert lowers the nonce)", async () => {
    const p = pool({ accountQueue: 3 });
    const state = richState(1).set(sender(0), { nonce: 3n });
    for (const n of [3, 4, 5]) await p.add(transfer(0, n), head(state));
    state.set(sender(0), { nonce: 0n });
    await p.onNewHead(head(state));
    expect(p.status()).toEqual({ pending: 0, queued: 3 });
    const err = await p.add(transfer(0, 1), head(state)).catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.ACCOUNT_QUEUE_FULL);
    expect((err as TxPoolError).message).toBe(
      `transaction pool is full: address ${bytesToHex(sender(0))} has 3 queued transactions (accountQueue 3)`,
    );
    // Nonce 0 continues the (empty) run: pending, and it does not promote 1's gap.
    expect((await p.add(transfer(0, 0), head(state))).status).toBe("pending");
  });
});

describe("global limits and eviction", () => {
  it("evicts the cheapest remote pending transaction for one that pays more", async () => {
    const p = pool({ globalSlots: 3 });
    const h = head(richState(5));
    await p.add(transfer(0, 0, 10n), h);
    await p.add(transfer(1, 0, 5n), h);
    await p.add(transfer(2, 0, 20n), h);
    // Same price as the cheapest: refused.
    const err = await p.add(transfer(3, 0, 5n), h).catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.POOL_FULL);
    expect((err as TxPoolError).message).toBe(
      "transaction pool is full: 3 pending transactions (globalSlots 3), none cheaper than gas price 5 to evict",
    );
    // Pays more: sender 1's transaction goes.
    expect((await p.add(transfer(3, 0, 6n), h)).status).toBe("pending");
    expect(p.get(transfer(1, 0, 5n).hash)).toBeUndefined();
    expect(p.pending()).toEqual([transfer(2, 0, 20n), transfer(0, 0, 10n), transfer(3, 0, 6n)]);
  });

  it("demotes the evicted sender's later transactions to queued", async () => {
    const p = pool({ globalSlots: 3 });
    const h = head(richState(2));
    await p.add(transfer(0, 0, 2n), h);
    await p.add(transfer(0, 1, 1n), h);
    await p.add(transfer(0, 2, 9n), h);
    // The cheapest is sender 0's nonce 1: nonce 2 can no longer run, so it is queued.
    expect((await p.add(transfer(1, 0, 3n), h)).status).toBe("pending");
    expect(p.get(transfer(0, 1, 1n).hash)).toBeUndefined();
    expect(p.get(transfer(0, 2, 9n).hash)?.status).toBe("queued");
    expect(p.pending()).toEqual([transfer(1, 0, 3n), transfer(0, 0, 2n)]);
  });

  it("never evicts locals for a price; a local evicts the cheapest remote at any price", async () => {
    const p = pool({ globalSlots: 2 });
    const h = head(richState(4));
    await p.add(transfer(0, 0, 1n), h, { local: true });
    await p.add(transfer(1, 0, 2n), h);
    // A remote paying more evicts the remote (2), not the cheaper local (1).
    await p.add(transfer(2, 0, 3n), h);
    expect(p.get(transfer(0, 0, 1n).hash)?.local).toBe(true);
    expect(p.get(transfer(1, 0, 2n).hash)).toBeUndefined();
    // A local paying less still gets in: the remote goes.
    await p.add(transfer(3, 0, 1n), h, { local: true });
    expect(p.get(transfer(2, 0, 3n).hash)).toBeUndefined();
    // Only locals left: a remote is refused, a local is admitted beyond the limit.
    expect(await code(p.add(transfer(1, 0, 99n), h))).toBe(TxPoolErrorCode.POOL_FULL);
    await p.add(transfer(2, 0, 1n), h, { local: true });
    expect(p.status()).toEqual({ pending: 3, queued: 0 });
  });

  it("evicts the cheapest remote queued transaction when globalQueue is full", async () => {
    const p = pool({ globalQueue: 2 });
    const h = head(richState(3));
    await p.add(transfer(0, 5, 4n), h);
    await p.add(transfer(1, 5, 2n), h);
    const err = await p.add(transfer(2, 5, 2n), h).catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.QUEUE_FULL);
    expect((err as TxPoolError).message).toBe(
      "transaction pool is full: 2 queued transactions (globalQueue 2), none cheaper than gas price 2 to evict",
    );
    expect((await p.add(transfer(2, 5, 3n), h)).status).toBe("queued");
    expect(p.get(transfer(1, 5, 2n).hash)).toBeUndefined();
    expect(p.status()).toEqual({ pending: 0, queued: 2 });
  });

  it("a promotion blocked by globalSlots leaves the transaction queued, and a new head promotes it later", async () => {
    const p = pool({ globalSlots: 2 });
    const state = richState(2);
    await p.add(transfer(0, 0, 5n), head(state));
    await p.add(transfer(1, 1, 5n), head(state));
    await p.add(transfer(1, 0, 6n), head(state)); // pending; nonce 1 must wait for room
    expect(p.status()).toEqual({ pending: 2, queued: 1 });
    p.remove([transfer(0, 0, 5n).hash]);
    state.set(sender(0), { nonce: 1n });
    await p.onNewHead(head(state));
    expect(nonces(p.pending())).toEqual([0n, 1n]);
  });
});

describe("expiry", () => {
  it("expires remote queued transactions older than lifetimeMs at the next head; keeps locals and pending", async () => {
    let now = 1_000_000;
    const p = pool({ lifetimeMs: 60_000, now: () => now });
    const state = richState(2);
    const h = head(state);
    await p.add(transfer(0, 0), h);
    await p.add(transfer(0, 2), h);
    await p.add(transfer(1, 3), h, { local: true });
    now += 30_000;
    await p.add(transfer(0, 4), h);
    now += 30_001;
    await p.onNewHead(h);
    expect(p.get(transfer(0, 2).hash)).toBeUndefined();
    expect(p.get(transfer(0, 4).hash)?.status).toBe("queued");
    expect(p.get(transfer(1, 3).hash)?.status).toBe("queued");
    expect(p.get(transfer(0, 0).hash)?.status).toBe("pending");
    now += 30_000;
    await p.onNewHead(h);
    expect(p.get(transfer(0, 4).hash)).toBeUndefined();
    expect(p.status()).toEqual({ pending: 1, queued: 1 });
  });
});

describe("eviction against a model", () => {
  it("does not take a transaction demoted to queued as a pending victim", async () => {
    const p = pool({ globalSlots: 3, globalQueue: 10 });
    const h = head(richState(5));
    await p.add(transfer(0, 0, 1n), h);
    await p.add(transfer(0, 1, 2n), h);
    await p.add(transfer(1, 0, 5n), h);
    // Full: sender 0's nonce 0 goes, and its nonce 1 is left queued behind the gap.
    await p.add(transfer(2, 0, 3n), h);
    expect(p.get(transfer(0, 1, 2n).hash)?.status).toBe("queued");
    await p.add(transfer(3, 0, 4n), h);
    // Full again: the cheapest pending one is sender 2's (3), not the queued nonce 1 (2).
    await p.add(transfer(4, 0, 6n), h);
    expect(p.get(transfer(2, 0, 3n).hash)).toBeUndefined();
    expect(p.get(transfer(0, 1, 2n).hash)?.status).toBe("queued");
    expect(p.status()).toEqual({ pending: 3, queued: 1 });
  });

  it("evicts, over 600 random arrivals and blocks, what a scan of the pool would", async () => {
    // One transaction per sender (nonce 0), so the model is a list: when the pending slots are
    // full, the cheapest remote one goes (the latest of equal prices) if the newcomer pays
    // more or is local; otherwise a remote newcomer is refused.
    const SLOTS = 8;
    const SENDERS = 600;
    const p = pool({ globalSlots: SLOTS, globalQueue: 4 });
    const state = richState(SENDERS);
    let seed = 0x1234567;
    const random = (n: number) => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    interface Held {
      sender: number;
      price: bigint;
      seq: number;
      local: boolean;
    }
    let model: Held[] = [];
    let seq = 0;
    let evictions = 0;
    let refusals = 0;
    for (let i = 0; i < SENDERS; i++) {
      if (random(10) === 0 && model.length > 0) {
        // A block mines a few of the held transactions.
        const mined = model.filter(() => random(3) === 0);
        for (const m of mined) state.set(sender(m.sender), { nonce: 1n });
        await p.onNewHead(head(state));
        model = model.filter((m) => !mined.includes(m));
      }
      const price = BigInt(1 + random(6));
      const local = random(8) === 0;
      let victim: Held | undefined;
      for (const m of model) {
        if (m.local) continue;
        if (
          victim === undefined ||
          m.price < victim.price ||
          (m.price === victim.price && m.seq > victim.seq)
        )
          victim = m;
      }
      const full = model.length >= SLOTS;
      const evicts = full && victim !== undefined && (local || victim.price < price);
      const added = await p.add(transfer(i, 0, price), head(state), { local }).then(
        () => true,
        (e: unknown) => {
          expect((e as TxPoolError).code).toBe(TxPoolErrorCode.POOL_FULL);
          return false;
        },
      );
      expect(added, `arrival ${i}`).toBe(!full || evicts || local);
      if (evicts) {
        model = model.filter((m) => m !== victim);
        evictions++;
      }
      if (added) model.push({ sender: i, price, seq: seq++, local });
      else refusals++;
      const held = new Set(p.pending().map((t) => bytesToHex(t.from)));
      expect(held, `arrival ${i}`).toEqual(new Set(model.map((m) => bytesToHex(sender(m.sender)))));
    }
    // The run reached the cases it is for.
    expect(evictions).toBeGreaterThan(50);
    expect(refusals).toBeGreaterThan(50);
  });
});

describe("transactions of a hosted node's API keys", () => {
  it("meet the global limits as remote ones do, though kept as locals", async () => {
    const p = pool({ globalSlots: 2 });
    const h = head(richState(4));
    await p.add(transfer(0, 0, 1n), h, { local: true });
    await p.add(transfer(1, 0, 1n), h, { local: true });
    // The node's own user gets in past the limit; a key holder does not.
    const err = await p
      .add(transfer(2, 0, 99n), h, { local: true, owner: "key_a" })
      .catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.POOL_FULL);
    expect(p.status()).toEqual({ pending: 2, queued: 0 });
  });

  it("hold at most ownerSlots per key, counted over senders, freed as they leave", async () => {
    const p = pool({ ownerSlots: 2 });
    const h = head(richState(4));
    await p.add(transfer(0, 0), h, { local: true, owner: "key_a" });
    await p.add(transfer(1, 0), h, { local: true, owner: "key_a" });
    const err = await p
      .add(transfer(2, 0), h, { local: true, owner: "key_a" })
      .catch((e: TxPoolError) => e);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.OWNER_SLOTS_FULL);
    expect((err as TxPoolError).message).toBe(
      "transaction pool is full for this API key: it has 2 transactions waiting (the share of one key is 2)",
    );
    // Another key, and the node's own users, are not held back by it.
    await p.add(transfer(2, 0), h, { local: true, owner: "key_b" });
    await p.add(transfer(3, 0), h, { local: true });
    // A replacement takes no new slot.
    await p.add(transfer(0, 0, 2_000_000_000n), h, { local: true, owner: "key_a" });
    // Sender 0's transaction mined: key_a has room again.
    await p.onNewHead(head(richState(4).set(sender(0), { nonce: 1n })));
    await p.add(transfer(0, 1), head(richState(4).set(sender(0), { nonce: 1n })), {
      local: true,
      owner: "key_a",
    });
  });
});
