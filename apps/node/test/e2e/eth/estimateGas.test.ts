import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// eth_estimateGas answers the least gas with which the call succeeds: with that gas it runs,
// with one less it does not. Contracts placed with hardhat_setCode.

const FROM = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

const slot0 = `0x${"00".repeat(32)}`;

// Each: runtime code, and the value of slot 0 before the call.
const CASES: [string, string, string][] = [
  // SSTORE 1 into an empty slot: PUSH1 1 PUSH1 0 SSTORE STOP.
  ["a store into an empty slot", "0x600160005500", "0x00"],
  // SSTORE 0 over a set slot: a refund, so the call needs more gas than it uses.
  ["a store that clears a slot (refunded)", "0x600060005500", "0x01"],
  // A loop that burns gas: PUSH1 200 JUMPDEST PUSH1 1 SWAP1 SUB DUP1 PUSH1 2 JUMPI STOP.
  ["a loop", "0x60c85b600190038060025700", "0x00"],
  // KECCAK of 4 KiB of memory, then STOP: memory expansion.
  ["memory expansion", "0x61100060002000", "0x00"],
];

describe("eth_estimateGas", () => {
  it.each(CASES)("%s: the estimate runs, one gas less does not", async (_name, code, value) => {
    const to = `0x${(0xe57000 + CASES.findIndex((c) => c[1] === code)).toString(16).padStart(40, "0")}`;
    await result("hardhat_setCode", [to, code]);
    await result("hardhat_setStorageAt", [to, "0x0", `0x${value.slice(2).padStart(64, "0")}`]);
    // Said to be legacy, as eth_call runs it (a typed one's estimate adds the 80 gas of an empty
    // access list).
    const estimate = BigInt(
      (await result("eth_estimateGas", [{ from: FROM, to, type: "0x0" }])) as string,
    );
    expect(estimate).toBeGreaterThan(21_000n);
    const at = await call(node.url, "eth_call", [
      { from: FROM, to, gas: `0x${estimate.toString(16)}` },
      "latest",
    ]);
    expect(at.error).toBeUndefined();
    const below = await call(node.url, "eth_call", [
      { from: FROM, to, gas: `0x${(estimate - 1n).toString(16)}` },
      "latest",
    ]);
    expect(below.error?.message).toMatch(/out of gas/);
    // Sent with the estimate, it succeeds.
    const hash = await result("eth_sendTransaction", [
      { from: FROM, to, gas: `0x${estimate.toString(16)}` },
    ]);
    const receipt = (await result("eth_getTransactionReceipt", [hash])) as { status: string };
    expect(receipt.status).toBe("0x1");
    // The store and the clear took effect; the others leave slot 0 as it was.
    const after = code === "0x600160005500" ? "0x01" : code === "0x600060005500" ? "0x00" : value;
    expect(await result("eth_getStorageAt", [to, slot0, "latest"])).toBe(
      `0x${after.slice(2).padStart(64, "0")}`,
    );
  });
});
