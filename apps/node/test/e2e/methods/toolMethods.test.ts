import {
  decodeRlp,
  JsonRpcProvider,
  keccak256,
  Transaction,
  verifyMessage,
  verifyTypedData,
  Wallet,
} from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Methods tools call beside the spec's: eth_getBlockReceipts, the signing methods of the
// node's accounts, txpool_contentFrom and geth's debug_getRaw*; and the sco_ methods of a
// node off the peer-to-peer network.
const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const KEY5 = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const TO = "0x000000000000000000000000000000000000c0de";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode({
    args: ["--rpc-modules", "eth,net,web3,rpc,txpool,nodex,evm,personal,debug,sco"],
  });
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method} ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

const sender = new Wallet(KEY5);
const transfer = (nonce: number, value = 1n) =>
  sender.signTransaction({
    to: TO,
    value,
    gasLimit: 21_000n,
    gasPrice: 0n,
    nonce,
    chainId: 33,
    type: 0,
  });

/** Two transfers mined into one block; the block's number and hash and the hashes. */
let block: { number: string; hash: string };
let hashes: string[];
beforeAll(async () => {
  await result("evm_stopMining");
  hashes = [
    (await result("eth_sendRawTransaction", [await transfer(0)])) as string,
    (await result("eth_sendRawTransaction", [await transfer(1)])) as string,
  ];
  await result("evm_mine");
  await result("evm_startMining");
  block = (await result("eth_getBlockByNumber", ["latest", false])) as typeof block;
});

describe("eth_getBlockReceipts", () => {
  it("answers every receipt of the block as eth_getTransactionReceipt does, by any selector", async () => {
    const one = await Promise.all(hashes.map((h) => result("eth_getTransactionReceipt", [h])));
    expect(one).toHaveLength(2);
    for (const selector of [
      block.number,
      block.hash,
      { blockHash: block.hash },
      { blockNumber: block.number },
      "latest",
    ]) {
      expect(await result("eth_getBlockReceipts", [selector])).toEqual(one);
    }
    expect(await result("eth_getBlockReceipts", ["0x0"])).toEqual([]);
  });

  it("answers null for an unknown block, -32602 for a malformed selector", async () => {
    expect(await result("eth_getBlockReceipts", ["0xffff"])).toBeNull();
    expect(await result("eth_getBlockReceipts", [`0x${"ab".repeat(32)}`])).toBeNull();
    const bad = await call(node.url, "eth_getBlockReceipts", ["0x01"]);
    expect(bad.error?.code).toBe(-32602);
    const missing = await call(node.url, "eth_getBlockReceipts", []);
    expect(missing.error).toEqual({
      code: -32602,
      message: "missing value for required argument 0",
    });
  });

  it("answers the pending block's receipts, with blockHash and blockNumber null", async () => {
    await result("evm_stopMining");
    try {
      const hash = await result("eth_sendRawTransaction", [await transfer(2)]);
      const receipts = (await result("eth_getBlockReceipts", ["pending"])) as Record<
        string,
        unknown
      >[];
      expect(receipts).toHaveLength(1);
      expect(receipts[0]).toMatchObject({
        transactionHash: hash,
        transactionIndex: "0x0",
        blockHash: null,
        blockNumber: null,
        gasUsed: "0x5208",
        status: "0x1",
      });
    } finally {
      await result("evm_startMining");
    }
  });
});

describe("debug_getRaw*", () => {
  it("answers the block, header, receipts and transaction as the chain encodes them", async () => {
    const raw = (await result("debug_getRawBlock", [block.number])) as string;
    const decoded = decodeRlp(raw) as unknown[];
    expect(decoded).toHaveLength(3);
    const header = (await result("debug_getRawHeader", [block.hash])) as string;
    expect(decodeRlp(header)).toEqual(decoded[0]);
    expect(await result("debug_getRawBlock", [{ blockHash: block.hash }])).toBe(raw);
    const txs = decoded[1] as unknown[];
    expect(txs).toHaveLength(2);
    for (const [i, hash] of hashes.entries()) {
      const tx = (await result("debug_getRawTransaction", [hash])) as string;
      expect(keccak256(tx)).toBe(hash);
      expect(decodeRlp(tx)).toEqual(txs[i]);
    }
    const receipts = (await result("debug_getRawReceipts", [block.number])) as string[];
    expect(receipts).toEqual(
      await Promise.all(hashes.map((h) => result("nodex_getRawTransactionReceiptByHash", [h]))),
    );
    expect(await result("debug_getRawReceipts", ["0x0"])).toEqual([]);
  });

  it("answers null for an unknown transaction and -32602 for an unknown block", async () => {
    expect(await result("debug_getRawTransaction", [`0x${"12".repeat(32)}`])).toBeNull();
    for (const method of ["debug_getRawBlock", "debug_getRawHeader", "debug_getRawReceipts"]) {
      const res = await call(node.url, method, ["0xffff"]);
      expect(res.error?.code, method).toBe(-32602);
      expect(res.error?.message, method).toMatch(/not found/);
    }
  });
});

describe("txpool_contentFrom", () => {
  it("answers one sender's pending and queued transactions by nonce, in txpool_content's form", async () => {
    await result("evm_stopMining");
    try {
      const nonce = Number(await result("eth_getTransactionCount", [sender.address, "latest"]));
      await result("eth_sendRawTransaction", [await transfer(nonce)]);
      await result("eth_sendRawTransaction", [await transfer(nonce + 2)]);
      const content = (await result("txpool_content")) as Record<
        string,
        Record<string, Record<string, unknown[]>>
      >;
      const key = sender.address.toLowerCase().slice(2);
      const from = (await result("txpool_contentFrom", [sender.address])) as Record<
        string,
        Record<string, unknown>
      >;
      expect(from).toEqual({
        pending: { [nonce]: content.pending![key]![nonce]![0] },
        queued: { [nonce + 2]: content.queued![key]![nonce + 2]![0] },
      });
      expect(await result("txpool_contentFrom", [TO])).toEqual({ pending: {}, queued: {} });
      const bad = await call(node.url, "txpool_contentFrom", ["0x1234"]);
      expect(bad.error?.code).toBe(-32602);
    } finally {
      await result("evm_reset");
      await result("evm_startMining");
    }
  });
});

describe("signing with the node's accounts", () => {
  const typedData = {
    types: {
      EIP712Domain: [
        { name: "name", type: "string" },
        { name: "version", type: "string" },
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
      Person: [
        { name: "name", type: "string" },
        { name: "wallet", type: "address" },
      ],
      Mail: [
        { name: "from", type: "Person" },
        { name: "to", type: "Person[]" },
        { name: "contents", type: "string" },
      ],
    },
    primaryType: "Mail",
    domain: {
      name: "Ether Mail",
      version: "1",
      chainId: 33,
      verifyingContract: "0xcccccccccccccccccccccccccccccccccccccccc",
    },
    message: {
      from: { name: "Cow", wallet: "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826" },
      to: [{ name: "Bob", wallet: "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" }],
      contents: "Hello, Bob!",
    },
  };
  const { EIP712Domain: _, ...types } = typedData.types;

  it("eth_signTypedData_v4 signs EIP-712 data that ethers.verifyTypedData recovers", async () => {
    const sig = (await result("eth_signTypedData_v4", [ACCOUNT, typedData])) as string;
    expect(sig).toMatch(/^0x[0-9a-f]{130}$/);
    expect(verifyTypedData(typedData.domain, types, typedData.message, sig).toLowerCase()).toBe(
      ACCOUNT,
    );
    // As JSON text, as MetaMask and ethers send it.
    expect(await result("eth_signTypedData_v4", [ACCOUNT, JSON.stringify(typedData)])).toBe(sig);
    // ethers' JsonRpcSigner calls it.
    const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true });
    try {
      const signer = await provider.getSigner(ACCOUNT);
      expect(await signer.signTypedData(typedData.domain, types, typedData.message)).toBe(sig);
    } finally {
      provider.destroy();
    }
  });

  it("eth_signTypedData_v4 refuses malformed typed data with -32602, unknown accounts with -32000", async () => {
    const noPrimary = await call(node.url, "eth_signTypedData_v4", [
      ACCOUNT,
      { ...typedData, primaryType: "Nope" },
    ]);
    expect(noPrimary.error).toEqual({
      code: -32602,
      message: "invalid argument 1: typed data: primaryType must name one of types",
    });
    const badValue = await call(node.url, "eth_signTypedData_v4", [
      ACCOUNT,
      { ...typedData, message: { ...typedData.message, from: { name: "x", wallet: "0x12" } } },
    ]);
    expect(badValue.error?.code).toBe(-32602);
    expect(badValue.error?.message).toMatch(/^invalid typed data/);
    const unknown = await call(node.url, "eth_signTypedData_v4", [TO, typedData]);
    expect(unknown.error).toEqual({ code: -32000, message: `unknown account ${TO}` });
  });

  it("personal_sign takes the data first and signs as eth_sign does (EIP-191)", async () => {
    const data = "0x48656c6c6f";
    const sig = (await result("personal_sign", [data, ACCOUNT])) as string;
    expect(sig).toBe(await result("eth_sign", [ACCOUNT, data]));
    expect(verifyMessage("Hello", sig).toLowerCase()).toBe(ACCOUNT);
    expect(await result("personal_sign", [data, ACCOUNT, "any passphrase"])).toBe(sig);
    const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true });
    try {
      const signer = await provider.getSigner(ACCOUNT);
      expect(await signer.signMessage("Hello")).toBe(sig);
    } finally {
      provider.destroy();
    }
  });

  it("eth_signTransaction answers the signed transaction with eth_sendTransaction's defaults, unsent", async () => {
    const nonce = await result("eth_getTransactionCount", [ACCOUNT, "pending"]);
    const gasPrice = await result("eth_gasPrice");
    const raw = (await result("eth_signTransaction", [
      { from: ACCOUNT, to: TO, value: "0x7" },
    ])) as string;
    const tx = Transaction.from(raw);
    expect(tx.from?.toLowerCase()).toBe(ACCOUNT);
    expect(tx.to?.toLowerCase()).toBe(TO);
    expect(tx.value).toBe(7n);
    expect(tx.nonce).toBe(Number(nonce));
    expect(tx.gasLimit).toBe(90_000n);
    // Legacy unless the request says otherwise: the cheapest here (RSKIP546 charges 80 gas for
    // a typed transaction's empty access list).
    expect(tx.type).toBe(0);
    expect(tx.gasPrice).toBe(BigInt(gasPrice as string));
    expect(tx.chainId).toBe(33n);
    // Not sent: the nonce has not moved, and the chain does not know it.
    expect(await result("eth_getTransactionCount", [ACCOUNT, "pending"])).toBe(nonce);
    expect(await result("eth_getTransactionByHash", [tx.hash])).toBeNull();
    // Sent as it is, it is taken.
    expect(await result("eth_sendRawTransaction", [raw])).toBe(tx.hash);
    // Type 2 when asked, by type or by its fee fields.
    for (const typed of [{ type: "0x2" }, { maxFeePerGas: gasPrice }]) {
      const signed = (await result("eth_signTransaction", [
        { from: ACCOUNT, to: TO, value: "0x1", ...typed },
      ])) as string;
      expect(Transaction.from(signed).type).toBe(2);
    }
  });
});

describe("sco_ on a node off the peer-to-peer network", () => {
  it("answers -32601 saying the network is off, and rpc_modules leaves sco out", async () => {
    for (const method of ["sco_peerList", "sco_bannedAddresses", "debug_wireProtocolQueueSize"]) {
      expect((await call(node.url, method, [])).error).toEqual({
        code: -32601,
        message: `the method ${method} is not available: the peer-to-peer network is off on this node (--no-p2p)`,
      });
    }
    const ban = await call(node.url, "sco_banAddress", ["10.0.0.1"]);
    expect(ban.error?.message).toMatch(/peer-to-peer network is off/);
    expect(Object.keys((await result("rpc_modules")) as object)).not.toContain("sco");
  });
});
