import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// BLOCKHASH answers the hashes of the chain's blocks: in eth_call, in a mined transaction
// (stored, then read back), and 0 outside the 256 blocks before the current one.
const DEV0 = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826";

/** Runtime: h = BLOCKHASH(CALLDATALOAD(0)); SSTORE(0, h); MSTORE(0, h); RETURN(0, 32). */
const RUNTIME = "5f3540805f555f5260205ff3";
/** Init code (9 bytes) that returns RUNTIME (12 bytes): CODECOPY(0, 9, 12), RETURN(0, 12). */
const INIT = `600c8060095f395ff3${RUNTIME}`;

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${res.error.message}`);
  return res.result;
}

const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

describe("BLOCKHASH", () => {
  it("answers the hashes of earlier blocks, in calls and in mined transactions", async () => {
    const created = (await rpc("eth_sendTransaction", [
      { from: DEV0, data: `0x${INIT}`, gas: "0x30000", type: "0x0" },
    ])) as string;
    const receipt = (await rpc("eth_getTransactionReceipt", [created])) as {
      contractAddress: string;
    };
    const at = receipt.contractAddress;
    for (let i = 0; i < 3; i++) await rpc("evm_mine", []);
    const head = Number(await rpc("eth_blockNumber", []));
    const hashOf = async (n: number) =>
      ((await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string })
        .hash;
    // eth_call at the head runs in the block after it: every block up to the head is in range.
    for (const n of [head, head - 1, 1, 0]) {
      expect(await rpc("eth_call", [{ to: at, data: word(n) }, "latest"])).toBe(await hashOf(n));
    }
    // The block being built and later ones: 0.
    expect(await rpc("eth_call", [{ to: at, data: word(head + 1) }, "latest"])).toBe(word(0));
    // At an older block, as of that block: a call at head - 1 runs in block head.
    const older = `0x${(head - 1).toString(16)}`;
    expect(await rpc("eth_call", [{ to: at, data: word(head) }, older])).toBe(word(0));
    expect(await rpc("eth_call", [{ to: at, data: word(head - 1) }, older])).toBe(
      await hashOf(head - 1),
    );
    // Mined: the transaction stores what it read, in block head + 1.
    await rpc("eth_sendTransaction", [
      { from: DEV0, to: at, data: word(head), gas: "0x20000", type: "0x0" },
    ]);
    expect(await rpc("eth_getStorageAt", [at, "0x0", "latest"])).toBe(await hashOf(head));
  });
});
