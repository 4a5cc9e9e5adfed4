import { bytesToHex, type SignedTransaction } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { TxPool, TxPoolError, TxPoolErrorCode, type TxPoolOptions } from "../../src/index.js";
import {
  CHAIN_ID,
  GWEI,
  head,
  MemState,
  richState,
  sender,
  TRANSFER_GAS,
  transfer,
} from "./helpers.js";

async function refusal(promise: Promise<unknown>): Promise<TxPoolError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(TxPoolError);
    return err as TxPoolError;
  }
  throw new Error("expected a refusal");
}

function pool(opts: Partial<TxPoolOptions> = {}): TxPool {
  return new TxPool({ chainId: CHAIN_ID, ...opts });
}

describe("TxPool.add refusals", () => {
  const addr = bytesToHex(sender(0));

  it("accepts a valid transfer as pending", async () => {
    const p = pool();
    const tx = transfer(0, 0);
    expect(await p.add(tx, head(richState(1)))).toEqual({ status: "pending" });
    expect(p.get(tx.hash)).toEqual({ tx, status: "pending", local: false });
    expect(p.status()).toEqual({ pending: 1, queued: 0 });
  });

  it("refuses the same hash twice, naming its status and geth's phrase", async () => {
    const p = pool();
    const h = head(richState(1));
    await p.add(transfer(0, 0), h);
    await p.add(transfer(0, 2), h);
    const pending = await refusal(p.add(transfer(0, 0), h));
    expect(pending.code).toBe(TxPoolErrorCode.ALREADY_KNOWN);
    expect(pending.message).toBe(
      `pending transaction with same hash already exists (already known): hash ${bytesToHex(transfer(0, 0).hash)}`,
    );
    const queued = await refusal(p.add(transfer(0, 2), h));
    expect(queued.code).toBe(TxPoolErrorCode.ALREADY_KNOWN);
    expect(queued.message).toMatch(
      /^queued transaction with same hash already exists \(already known\)/,
    );
  });

  it("refuses another chain's id and accepts the node's", async () => {
    const err = await refusal(
      pool().add(transfer(0, 0, GWEI, { chainId: 31 }), head(richState(1))),
    );
    expect(err.code).toBe(TxPoolErrorCode.CHAIN_ID_MISMATCH);
    expect(err.message).toBe(
      "invalid chain id: transaction signed for chain 31, this network is 33",
    );
  });

  it("accepts a transaction without a chain id (v = 27/28)", async () => {
    const base = transfer(0, 0);
    const unprotected: SignedTransaction = { ...base, chainId: undefined };
    expect((await pool().add(unprotected, head(richState(1)))).status).toBe("pending");
  });

  it("refuses a gas price under the head's minimum", async () => {
    const err = await refusal(
      pool().add(transfer(0, 0, 9n), head(richState(1), { minimumGasPrice: 10n })),
    );
    expect(err.code).toBe(TxPoolErrorCode.GAS_PRICE_TOO_LOW);
    expect(err.message).toBe(
      "transaction's gas price lower than block's minimum: gas price 9, minimum 10",
    );
    // At the minimum exactly is fine.
    const ok = await pool().add(transfer(0, 0, 10n), head(richState(1), { minimumGasPrice: 10n }));
    expect(ok.status).toBe("pending");
  });

  it("refuses a gas limit over the block's", async () => {
    const tx = transfer(0, 0, GWEI, { gasLimit: 6_800_001n });
    const err = await refusal(pool().add(tx, head(richState(1))));
    expect(err.code).toBe(TxPoolErrorCode.GAS_LIMIT_EXCEEDED);
    expect(err.message).toBe(
      "transaction's gas limit exceeds block gas limit: gas limit 6800001, block gas limit 6800000",
    );
  });

  it("refuses a gas limit under the intrinsic gas (data and creation count)", async () => {
    const low = await refusal(
      pool().add(transfer(0, 0, GWEI, { gasLimit: 20_999n }), head(richState(1))),
    );
    expect(low.code).toBe(TxPoolErrorCode.INTRINSIC_GAS_TOO_LOW);
    expect(low.message).toBe(
      "transaction's basic cost is above the gas limit (intrinsic gas too low): gas limit 20999, intrinsic gas 21000",
    );
    // 21000 + 32000 (creation) + 2 × 16 (non-zero bytes) + 1 × 4 (zero byte) + 2 (one init-code word)
    const create = transfer(0, 0, GWEI, {
      to: null,
      data: new Uint8Array([1, 0, 2]),
      gasLimit: 53_037n,
    });
    const err = await refusal(pool().add(create, head(richState(1))));
    expect(err.message).toContain("gas limit 53037, intrinsic gas 53038");
  });

  it("refuses a nonce under the account's", async () => {
    const state = richState(1).set(sender(0), { nonce: 5n });
    const err = await refusal(pool().add(transfer(0, 3), head(state)));
    expect(err.code).toBe(TxPoolErrorCode.NONCE_TOO_LOW);
    expect(err.message).toBe(`transaction nonce too low: address ${addr}, tx 3, state 5`);
  });

  it("refuses a nonce accountQueue or more ahead of the account's", async () => {
    const state = richState(1).set(sender(0), { nonce: 5n });
    const p = pool({ accountQueue: 4 });
    expect((await p.add(transfer(0, 8), head(state))).status).toBe("queued");
    const err = await refusal(p.add(transfer(0, 9), head(state)));
    expect(err.code).toBe(TxPoolErrorCode.NONCE_TOO_HIGH);
    expect(err.message).toBe(
      `transaction nonce too high: address ${addr}, tx 9, state 5, highest accepted 8`,
    );
  });

  it("refuses a transaction the balance does not cover", async () => {
    const cost = TRANSFER_GAS * GWEI + 1n;
    const state = new MemState().set(sender(0), { balance: cost - 1n });
    const err = await refusal(pool().add(transfer(0, 0), head(state)));
    expect(err.code).toBe(TxPoolErrorCode.INSUFFICIENT_FUNDS);
    expect(err.message).toBe(
      `insufficient funds: address ${addr}, balance ${cost - 1n}, cost ${cost} (gas 21000 × price ${GWEI} + value 1)`,
    );
    state.set(sender(0), { balance: cost });
    expect((await pool().add(transfer(0, 0), head(state))).status).toBe("pending");
  });

  it("refuses a transaction the balance covers alone but not with the pending ones", async () => {
    const cost = TRANSFER_GAS * GWEI + 1n;
    const state = new MemState().set(sender(0), { balance: 2n * cost + 5n });
    const p = pool();
    await p.add(transfer(0, 0), head(state));
    await p.add(transfer(0, 1), head(state));
    const err = await refusal(p.add(transfer(0, 2), head(state)));
    expect(err.code).toBe(TxPoolErrorCode.INSUFFICIENT_FUNDS_PENDING);
    expect(err.message).toBe(
      `insufficient funds to pay for pending and new transactions: address ${addr}, balance ${2n * cost + 5n}, pending ${2n * cost}, new ${cost}`,
    );
    // A replacement does not count the transaction it replaces.
    const bump = transfer(0, 1, (GWEI * 14n) / 10n, { value: 1n, gasLimit: TRANSFER_GAS });
    const replacementCost = TRANSFER_GAS * bump.gasPrice + 1n;
    state.set(sender(0), { balance: cost + replacementCost });
    expect((await p.add(bump, head(state))).replaced?.hash).toEqual(transfer(0, 1).hash);
  });

  it("checks what needs no state before what does", async () => {
    const state = new MemState(); // no balance
    const err = await refusal(pool().add(transfer(0, 0, 0n), head(state)));
    expect(err.code).toBe(TxPoolErrorCode.GAS_PRICE_TOO_LOW);
  });
});

describe("TxPool options", () => {
  it("refuses options out of range", () => {
    expect(() => pool({ accountSlots: 0 })).toThrow(TxPoolError);
    expect(() => pool({ priceBumpPercent: -1 })).toThrow(
      /priceBumpPercent must be a non-negative integer/,
    );
    expect(() => pool({ globalQueue: 1.5 })).toThrow(
      /globalQueue must be a positive integer, got 1.5/,
    );
  });
});
