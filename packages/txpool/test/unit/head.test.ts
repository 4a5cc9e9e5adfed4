import { describe, expect, it } from "vitest";
import { TxPool } from "../../src/index.js";
import {
  CHAIN_ID,
  GWEI,
  head,
  nonces,
  richState,
  sender,
  TRANSFER_GAS,
  transfer,
} from "./helpers.js";

describe("onNewHead", () => {
  it("after a block: the mined transactions are gone, the rest promoted", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(2);
    const h = head(state);
    for (const n of [0, 1, 2, 4]) await pool.add(transfer(0, n), h);
    await pool.add(transfer(1, 0), h);
    // A block mines sender 0's 0–2 and a 3 the pool never saw, and sender 1's 0.
    state.set(sender(0), { nonce: 4n }).set(sender(1), { nonce: 1n });
    await pool.onNewHead(head(state, { number: 2n }));
    expect(pool.pending()).toEqual([transfer(0, 4)]);
    expect(pool.status()).toEqual({ pending: 1, queued: 0 });
    expect(pool.get(transfer(0, 1).hash)).toBeUndefined();
    expect(pool.pendingNonce(sender(0), 4n)).toBe(5n);
  });

  it("drops transactions the balance no longer covers; those after them wait queued", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(1);
    await pool.add(transfer(0, 0), head(state));
    await pool.add(transfer(0, 1, GWEI, { value: 10n ** 20n }), head(state));
    await pool.add(transfer(0, 2), head(state));
    state.set(sender(0), { balance: 10n ** 18n });
    await pool.onNewHead(head(state));
    expect(pool.get(transfer(0, 1, GWEI, { value: 10n ** 20n }).hash)).toBeUndefined();
    expect(nonces(pool.pending())).toEqual([0n]);
    expect(pool.get(transfer(0, 2).hash)?.status).toBe("queued");
  });

  it("keeps pending only what the balance covers together", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(1);
    for (let n = 0; n < 3; n++) await pool.add(transfer(0, n), head(state));
    const each = TRANSFER_GAS * GWEI + 1n;
    state.set(sender(0), { balance: 2n * each });
    await pool.onNewHead(head(state));
    expect(nonces(pool.pending())).toEqual([0n, 1n]);
    expect(pool.status()).toEqual({ pending: 2, queued: 1 });
    state.set(sender(0), { balance: 3n * each });
    await pool.onNewHead(head(state));
    expect(pool.status()).toEqual({ pending: 3, queued: 0 });
  });

  it("after a revert (the nonce goes back down): the transactions stay, queued behind the gap", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(1).set(sender(0), { nonce: 5n });
    await pool.add(transfer(0, 5), head(state));
    await pool.add(transfer(0, 6), head(state));
    state.set(sender(0), { nonce: 3n });
    await pool.onNewHead(head(state));
    expect(pool.status()).toEqual({ pending: 0, queued: 2 });
    expect(pool.get(transfer(0, 5).hash)?.status).toBe("queued");
    // Re-sending 3 and 4 fills the gap and everything runs again.
    await pool.add(transfer(0, 3), head(state));
    await pool.add(transfer(0, 4), head(state));
    expect(nonces(pool.pending())).toEqual([3n, 4n, 5n, 6n]);
  });

  it("after a revert to the same nonce: everything stays pending", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(1);
    await pool.add(transfer(0, 0), head(state));
    await pool.add(transfer(0, 1), head(state));
    await pool.onNewHead(head(state, { number: 0n }));
    expect(nonces(pool.pending())).toEqual([0n, 1n]);
  });

  it("an add against a newer head than the pool last saw rebases the sender first", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID });
    const state = richState(1);
    await pool.add(transfer(0, 0), head(state));
    await pool.add(transfer(0, 1), head(state));
    state.set(sender(0), { nonce: 1n });
    expect((await pool.add(transfer(0, 2), head(state))).status).toBe("pending");
    expect(nonces(pool.pending())).toEqual([1n, 2n]);
    expect(pool.get(transfer(0, 0).hash)).toBeUndefined();
  });
});
