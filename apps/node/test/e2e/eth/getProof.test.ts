import { getCreateAddress, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// eth_getProof: storage keys of any length up to 32 bytes, and the block as a number, a tag, a
// hash, an EIP-1898 object or left out.

const KEY4 = "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a";
const wallet = new Wallet(KEY4);
/** Runtime: sstore(0, callvalue). */
const RUNTIME = "3460005500";
/** Init: sstore(0, 0x2a); sstore(1, 0xbeef); then return RUNTIME (5 bytes at offset 22). */
const INIT = `0x602a60005561beef60015560058060166000396000f3${RUNTIME}`;
const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type StorageProof = { key: string; value: string; proof: string[] };
type Proof = { address: string; storageHash: string; storageProof: StorageProof[] } & Record<
  string,
  unknown
>;

let node: RunningNode;
let contract: string;
/** The block that deployed the contract (slot 0 = 0x2a) and the one after (slot 0 = 9). */
let deployBlock: { hash: string; number: string };
beforeAll(async () => {
  node = await startNode();
  const signed = (nonce: number, tx: { to?: string; data?: string; value?: bigint }) =>
    wallet.signTransaction({
      gasLimit: 200_000n,
      gasPrice: 0n,
      nonce,
      chainId: 33,
      type: 0,
      ...tx,
    });
  const deploy = await result("eth_sendRawTransaction", [await signed(0, { data: INIT })]);
  const receipt = (await result("eth_getTransactionReceipt", [deploy])) as {
    status: string;
    contractAddress: string;
    blockHash: string;
    blockNumber: string;
  };
  expect(receipt.status).toBe("0x1");
  contract = receipt.contractAddress;
  expect(contract).toBe(getCreateAddress({ from: wallet.address, nonce: 0 }).toLowerCase());
  deployBlock = { hash: receipt.blockHash, number: receipt.blockNumber };
  const set = await result("eth_sendRawTransaction", [
    await signed(1, { to: contract, value: 9n }),
  ]);
  expect(((await result("eth_getTransactionReceipt", [set])) as { status: string }).status).toBe(
    "0x1",
  );
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

const proof = async (keys: string[], ...block: unknown[]) =>
  (await result("eth_getProof", [contract, keys, ...block])) as Proof;

describe("eth_getProof storage keys", () => {
  it("reads the constructor's slots with 32-byte keys", async () => {
    const answer = await proof([word(0), word(1), word(2)], "latest");
    expect(answer.address).toBe(contract);
    expect(answer.storageProof.map((s) => [s.key, s.value])).toEqual([
      [word(0), "0x9"],
      [word(1), "0xbeef"],
      [word(2), "0x0"],
    ]);
    for (const s of answer.storageProof) expect(s.proof.length).toBeGreaterThan(0);
    expect(answer.storageProof[0]!.proof).not.toEqual(answer.storageProof[1]!.proof);
  });

  it("takes short and odd-length keys as the 32-byte key they pad to, answering the key as asked (geth)", async () => {
    const full = await proof([word(0), word(1)], "latest");
    for (const [short, slot] of [
      ["0x0", 0],
      ["0x00", 0],
      ["0x1", 1],
      ["0x01", 1],
      ["0x001", 1],
      ["0x0001", 1],
    ] as const) {
      const answer = await proof([short], "latest");
      expect(answer.storageHash).toBe(full.storageHash);
      expect(answer.storageProof, short).toEqual([{ ...full.storageProof[slot], key: short }]);
      // The key comes back as the request wrote it, as geth answers it.
      expect(answer.storageProof[0]!.key, short).toBe(short);
    }
    const upper = `0x${"0".repeat(62)}0A`;
    const mixed = await proof(["0x1", word(0), "0x01", upper], "latest");
    expect(mixed.storageProof.map((s) => s.value)).toEqual(["0xbeef", "0x9", "0xbeef", "0x0"]);
    expect(mixed.storageProof.map((s) => s.key)).toEqual(["0x1", word(0), "0x01", upper]);
  });

  it("refuses a key longer than 32 bytes with -32602", async () => {
    const res = await call(node.url, "eth_getProof", [contract, [`0x01${"00".repeat(32)}`]]);
    expect(res.result).toBeUndefined();
    expect(res.error).toEqual({
      code: -32602,
      message: "invalid argument 1: storageKeys[0]: hex string too long: 33 bytes, want at most 32",
    });
    // 65 digits: one too many, whatever their value
    const odd = await call(node.url, "eth_getProof", [contract, [`0x1${"0".repeat(64)}`]]);
    expect(odd.error?.code).toBe(-32602);
    expect(odd.error?.message).toMatch(
      /^invalid argument 1: storageKeys\[0\]: hex string too long/,
    );
    const second = await call(node.url, "eth_getProof", [
      contract,
      ["0x1", `0x${"ab".repeat(33)}`],
    ]);
    expect(second.error?.code).toBe(-32602);
    expect(second.error?.message).toMatch(
      /^invalid argument 1: storageKeys\[1\]: hex string too long/,
    );
  });
});

describe("eth_getProof block", () => {
  it("answers for a block hash as for its number, given plain or as {blockHash}", async () => {
    const byNumber = await proof([word(0), "0x1"], deployBlock.number);
    expect(byNumber.storageProof.map((s) => s.value)).toEqual(["0x2a", "0xbeef"]);
    expect(await proof([word(0), "0x1"], deployBlock.hash)).toEqual(byNumber);
    expect(await proof([word(0), "0x1"], { blockHash: deployBlock.hash })).toEqual(byNumber);
    expect(await proof([word(0), "0x1"], { blockNumber: deployBlock.number })).toEqual(byNumber);
    const latest = await proof([word(0), "0x1"], "latest");
    expect(latest.storageProof[0]!.value).toBe("0x9");
    expect(latest.storageHash).not.toBe(byNumber.storageHash);
  });

  it("answers as latest when the block is left out", async () => {
    const latest = await proof(["0x0", "0x1"], "latest");
    expect(await proof(["0x0", "0x1"])).toEqual(latest);
    expect((await proof(["0x0"])).storageProof[0]!.value).toBe("0x9");
  });

  it("refuses an unknown block hash, in either form, rather than answering for latest", async () => {
    const unknown = `0x${"11".repeat(32)}`;
    for (const block of [unknown, { blockHash: unknown }]) {
      const res = await call(node.url, "eth_getProof", [contract, ["0x0"], block]);
      expect(res.result).toBeUndefined();
      expect(res.error).toEqual({ code: -32602, message: `block ${unknown} not found` });
    }
  });
});
