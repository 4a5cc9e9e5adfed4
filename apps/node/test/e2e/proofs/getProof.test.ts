import { RLP } from "@ethereumjs/rlp";
import { deriveDevAccounts } from "@nodex/types";
import { concat, hexlify, Interface, keccak256, toBeHex, Wallet, zeroPadValue } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, send as post, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";
import {
  type AccountProof,
  EMPTY_CODE_HASH,
  EMPTY_TRIE_ROOT,
  verifyAccount,
  verifyStorage,
} from "./verify.js";

// eth_getProof proven with an independent verifier (verify.ts: @ethereumjs/mpt and ethers)
// against the stateRoot of eth_getBlockByNumber: accounts with and without storage, absent
// accounts and slots, on latest, an older block and earliest; the mapping-slot rule of the spec
// on a deployed contract (the worked example of docs/rpc.md); the raw header of
// nodex_getRawBlockHeaderByHash against the block hash.

const [alice, bob] = deriveDevAccounts();
const deployer = new Wallet(hexlify(alice!.privateKey));
const { Balances } = compile("../proofs/Balances.sol");
const balances = new Interface(Balances!.abi as never[]);
/** Nobody: no account at any block. */
const ABSENT = "0x00000000000000000000000000000000000b0b0b";
/** An account that gets a payment and never sends: a balance, no code, no storage. */
const PAYEE = "0x0000000000000000000000000000000000c0ffee";

/**
 * The worked example of docs/rpc.md: `balances[holder]` of the first contract alice deploys
 * (`Balances`, its mapping at slot 0), holder being the second development account.
 */
const EXAMPLE = {
  contract: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  holder: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
  key: "0x14e04a66bf74771820a7400ff6cf065175b3d7eb25805a5bd1633b161af5d101",
  value: "0x3e8",
};

let node: RunningNode;
/** The block where balances[holder] became 2000, and the one where it became 1000 (each its own). */
let first: Block;
let second: Block;
type Block = { hash: string; number: string; stateRoot: string };

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

async function send(nonce: number, tx: { to?: string; data?: string; value?: bigint }) {
  const raw = await deployer.signTransaction({
    gasLimit: 300_000n,
    gasPrice: 0n,
    nonce,
    chainId: 33,
    type: 0,
    ...tx,
  });
  const hash = await result("eth_sendRawTransaction", [raw]);
  const receipt = (await result("eth_getTransactionReceipt", [hash])) as {
    status: string;
    blockNumber: string;
    contractAddress: string | null;
  };
  expect(receipt.status).toBe("0x1");
  return receipt;
}

const block = async (tag: string) => (await result("eth_getBlockByNumber", [tag, false])) as Block;
const getProof = async (address: string, keys: string[], at: string) =>
  (await result("eth_getProof", [address, keys, at])) as AccountProof;

beforeAll(async () => {
  node = await startNode();
  expect(hexlify(bob!.address)).toBe(EXAMPLE.holder);
  const deployed = await send(0, { data: Balances!.bytecode });
  expect(deployed.contractAddress).toBe(EXAMPLE.contract);
  const set = (amount: number) => balances.encodeFunctionData("set", [EXAMPLE.holder, amount]);
  first = await block((await send(1, { to: EXAMPLE.contract, data: set(2000) })).blockNumber);
  await send(2, { to: PAYEE, value: 12_345n });
  second = await block((await send(3, { to: EXAMPLE.contract, data: set(1000) })).blockNumber);
  expect(BigInt(second.number)).toBe(BigInt(first.number) + 2n);
});
afterAll(async () => {
  await node?.stop();
});

describe("eth_getProof against the state root", () => {
  it("proves accounts with storage, without storage, and absent ones on latest", async () => {
    const latest = await block("latest");
    const contract = await getProof(EXAMPLE.contract, [], "latest");
    expect(await verifyAccount(contract, latest.stateRoot)).toBe(true);
    expect(contract.storageHash).not.toBe(EMPTY_TRIE_ROOT);
    expect(contract.codeHash).toBe(
      keccak256((await result("eth_getCode", [EXAMPLE.contract, "latest"])) as string),
    );

    const sender = await getProof(hexlify(alice!.address), [], "latest");
    expect(await verifyAccount(sender, latest.stateRoot)).toBe(true);
    expect(sender.nonce).toBe("0x4");
    expect(sender.storageHash).toBe(EMPTY_TRIE_ROOT);
    expect(sender.codeHash).toBe(EMPTY_CODE_HASH);

    const payee = await getProof(PAYEE, [], "latest");
    expect(await verifyAccount(payee, latest.stateRoot)).toBe(true);
    expect(payee.balance).toBe(`0x${(12_345).toString(16)}`);

    const absent = await getProof(ABSENT, ["0x0"], "latest");
    expect(await verifyAccount(absent, latest.stateRoot)).toBe(false);
    expect(absent.accountProof.length).toBeGreaterThan(0);
    expect(await verifyStorage(absent.storageHash, absent.storageProof[0]!)).toBe(0n);
  });

  it("proves slots that hold values and slots that are empty (exclusion proofs)", async () => {
    const empty = keccak256(concat([zeroPadValue(PAYEE, 32), zeroPadValue("0x00", 32)]));
    const answer = await getProof(EXAMPLE.contract, [EXAMPLE.key, empty, "0x1"], "latest");
    expect(await verifyAccount(answer, second.stateRoot)).toBe(true);
    const values = [];
    for (const entry of answer.storageProof)
      values.push(await verifyStorage(answer.storageHash, entry));
    expect(values).toEqual([1000n, 0n, 0n]);
    // An empty slot of an account without storage.
    const eoa = await getProof(PAYEE, [EXAMPLE.key], "latest");
    expect(await verifyStorage(eoa.storageHash, eoa.storageProof[0]!)).toBe(0n);
  });

  it("proves an older block's state against that block's root", async () => {
    const answer = await getProof(EXAMPLE.contract, [EXAMPLE.key], first.number);
    expect(await verifyAccount(answer, first.stateRoot)).toBe(true);
    expect(await verifyStorage(answer.storageHash, answer.storageProof[0]!)).toBe(2000n);
    // The payee did not exist yet.
    expect(await verifyAccount(await getProof(PAYEE, [], first.number), first.stateRoot)).toBe(
      false,
    );
    // By hash too, and the proof of latest fails against the older root.
    const byHash = await getProof(EXAMPLE.contract, [EXAMPLE.key], first.hash);
    expect(byHash).toEqual(answer);
    const latest = await getProof(EXAMPLE.contract, [EXAMPLE.key], "latest");
    await expect(verifyAccount(latest, first.stateRoot)).rejects.toThrow();
  });

  it("proves the genesis state on earliest", async () => {
    const genesis = await block("earliest");
    expect(genesis.number).toBe("0x0");
    const funded = await getProof(hexlify(alice!.address), [], "earliest");
    expect(await verifyAccount(funded, genesis.stateRoot)).toBe(true);
    expect(funded.nonce).toBe("0x0");
    expect(funded.balance).toBe(
      await result("eth_getBalance", [hexlify(alice!.address), "earliest"]),
    );
    expect(BigInt(funded.balance)).toBeGreaterThan(0n);
    const notYet = await getProof(EXAMPLE.contract, [EXAMPLE.key], "earliest");
    expect(await verifyAccount(notYet, genesis.stateRoot)).toBe(false);
    expect(await verifyStorage(notYet.storageHash, notYet.storageProof[0]!)).toBe(0n);
  });
});

describe("the mapping-slot rule (docs/rpc.md's worked example)", () => {
  it("finds balances[holder] of a mapping at slot 0 under keccak256(pad32(holder) ++ pad32(0))", async () => {
    const key = keccak256(concat([zeroPadValue(EXAMPLE.holder, 32), zeroPadValue("0x00", 32)]));
    expect(key).toBe(EXAMPLE.key);
    const res = await post(node.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getProof",
      params: [EXAMPLE.contract, [EXAMPLE.key], "latest"],
    });
    const answer = (res.json as { result: AccountProof }).result;
    expect(answer.address).toBe(EXAMPLE.contract);
    // The answer docs/rpc.md shows: one slot, so the storage proof is one leaf node.
    expect(answer.storageProof).toEqual([
      {
        key: EXAMPLE.key,
        value: EXAMPLE.value,
        proof: ["0xe6a120d1f4cf23a40eba68d7293fec5b4149220933c8fb1ebe12bbd12effdcb867f3ab838203e8"],
      },
    ]);
    expect(answer.storageHash).toBe(
      "0x6ad1786b5988060e274da6e6596718857797940ce399653c9a20a8edb4661af1",
    );
    expect(keccak256(answer.storageProof[0]!.proof[0]!)).toBe(answer.storageHash);
    expect(answer.nonce).toBe("0x1");
    // Proven against the state root of latest, and read the two other ways.
    const latest = await block("latest");
    expect(await verifyAccount(answer, latest.stateRoot)).toBe(true);
    expect(await verifyStorage(answer.storageHash, answer.storageProof[0]!)).toBe(1000n);
    expect(await result("eth_getStorageAt", [EXAMPLE.contract, EXAMPLE.key, "latest"])).toBe(
      toBeHex(BigInt(EXAMPLE.value), 32),
    );
    const data = balances.encodeFunctionData("balances", [EXAMPLE.holder]);
    expect(
      BigInt((await result("eth_call", [{ to: EXAMPLE.contract, data }, "latest"])) as string),
    ).toBe(1000n);
  });
});

describe("nodex_getRawBlockHeaderByHash", () => {
  it("decodes to the block's fields, and keccak256 of it is the block hash", async () => {
    const latest = (await result("eth_getBlockByNumber", ["latest", false])) as Record<
      string,
      string
    >;
    const raw = (await result("nodex_getRawBlockHeaderByHash", [latest.hash])) as string;
    const fields = RLP.decode(raw) as Uint8Array[];
    expect(fields).toHaveLength(18);
    const field = (i: number) => hexlify(fields[i]!);
    expect(field(0)).toBe(latest.parentHash);
    expect(field(3)).toBe(latest.stateRoot);
    expect(field(4)).toBe(latest.transactionsRoot);
    expect(field(5)).toBe(latest.receiptsRoot);
    expect(BigInt(field(8))).toBe(BigInt(latest.number!));
    expect(field(17)).toBe(latest.bitcoinMergedMiningHeader);
    expect(keccak256(raw)).toBe(latest.hash);
    expect(await result("nodex_getRawBlockHeaderByNumber", [latest.number])).toBe(raw);
  });
});
