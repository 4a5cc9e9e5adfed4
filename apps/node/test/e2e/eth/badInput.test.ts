import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Every chain method against malformed parameters and blocks that do not exist: the exact
// JSON-RPC code and message (-32602, saying which argument and why), or `null` where the spec
// says a lookup that finds nothing is null, and never -32603. A few such cases live beside the
// features they belong to (chain.test.ts, logs.test.ts, lookups.test.ts) and are not repeated.

const A = `0x${"11".repeat(20)}`;
/** A block and transaction hash this node does not have. */
const H = `0x${"ab".repeat(32)}`;
const H31 = `0x${"ab".repeat(31)}`;
/** The node has only its genesis block: nothing in this file sends a transaction. */
const PAST_HEAD = "0x1";
const MAX_U64 = "0xffffffffffffffff";
/** Stands for the genesis block's hash, read once the node runs. */
const GENESIS = "<genesis hash>";

let node: RunningNode;
let genesisHash: string;
beforeAll(async () => {
  node = await startNode();
  const genesis = await call(node.url, "eth_getBlockByNumber", ["0x0", false]);
  genesisHash = (genesis.result as { hash: string }).hash;
  expect((await call(node.url, "eth_blockNumber")).result).toBe("0x0");
});
afterAll(async () => {
  await node?.stop();
});

/** The params with the genesis placeholder filled in. */
const fill = (params: unknown[]): unknown[] =>
  JSON.parse(JSON.stringify(params).replaceAll(GENESIS, genesisHash));

// ---- What each kind of argument refuses, and the reason given ----

type Bad = readonly [value: unknown, reason: string];

const WRONG_TYPES: readonly (readonly [unknown, string])[] = [
  [1, "number"],
  [{}, "object"],
  [[], "array"],
  [true, "boolean"],
];
const wrongTypes = (expected: string, required: boolean): Bad[] =>
  [...WRONG_TYPES, ...(required ? [[null, "null"] as const] : [])].map(([value, type]) => [
    value,
    `expected ${expected}, got ${type}`,
  ]);

/** DATA of a fixed size (an address, a hash). */
const fixedData = (bytes: number, what: string): Bad[] => [
  ...wrongTypes("a hex string", true),
  ["", "empty hex string"],
  ["11".repeat(bytes), "hex string without 0x prefix"],
  [`0X${"11".repeat(bytes)}`, "hex string without 0x prefix"],
  [`0x${"1".repeat(bytes * 2 - 1)}`, "hex string of odd length"],
  [`0x${"zz".repeat(bytes)}`, "invalid hex string"],
  [
    `0x${"11".repeat(bytes - 1)}`,
    `hex string has length ${bytes * 2 - 2}, want ${bytes * 2} for ${what}`,
  ],
  [
    `0x${"11".repeat(bytes + 1)}`,
    `hex string has length ${bytes * 2 + 2}, want ${bytes * 2} for ${what}`,
  ],
];

const quantity = (maxBits: number): Bad[] => [
  ...wrongTypes("a hex string", true),
  ["0x", 'hex string "0x" has no digits'],
  ["0x00", "hex string has leading zero digits"],
  ["0xzz", "invalid hex string"],
  ["10", "hex string without 0x prefix"],
  ["-0x1", "hex string without 0x prefix"],
  [`0x1${"0".repeat(maxBits / 4)}`, `hex number > ${maxBits} bits`],
];

const TAGS = "latest, earliest, pending, safe, finalized";

/** Forms both block-number parameters share. */
const numberOrTagStrings: Bad[] = [
  ["Latest", `invalid block tag "Latest", want ${TAGS} or a hex block number`],
  ["", `invalid block tag "", want ${TAGS} or a hex block number`],
  ["0x01", "hex string has leading zero digits"],
  ["0x", 'hex string "0x" has no digits'],
  ["0xzz", "invalid hex string"],
  [`0x1${"0".repeat(16)}`, "hex number > 64 bits"],
  // 31 bytes is no hash: read as a number, too large for one
  [H31, "hex number > 64 bits"],
];

const kinds = {
  address: fixedData(20, "address"),
  hash: fixedData(32, "hash"),
  index: quantity(256),
  raw: [
    ...wrongTypes("a hex string", true),
    ["0x1", "hex string of odd length"],
    ["0xzz", "invalid hex string"],
    ["f8", "hex string without 0x prefix"],
  ] as Bad[],
  fullTransactions: [
    [1, "expected a boolean, got number"],
    ["true", "expected a boolean, got string"],
    ["0x1", "expected a boolean, got string"],
    [{}, "expected a boolean, got object"],
    [[], "expected a boolean, got array"],
  ] as Bad[],
  /** eth_getBlockByNumber and its kin: a QUANTITY or a TAG, nothing else. */
  numberOrTag: [
    ...wrongTypes("a block number or tag", true),
    [{ blockNumber: "0x0" }, "expected a block number or tag, got object"],
    [H, "hex number > 64 bits"],
    ...numberOrTagStrings,
  ] as Bad[],
  /** State reads, eth_call, eth_estimateGas: also a hash and the EIP-1898 objects. */
  selector: [
    ...wrongTypes("a block number, tag, hash or object", false).filter(([v]) => !isEmptyObject(v)),
    [{}, "a block selector object needs blockHash or blockNumber"],
    [
      { blockHash: H, blockNumber: "0x0" },
      "cannot specify both blockHash and blockNumber, choose one",
    ],
    [
      { blockHash: H, blockNumber: null },
      "cannot specify both blockHash and blockNumber, choose one",
    ],
    [{ blockHash: H31 }, "blockHash: hex string has length 62, want 64 for hash"],
    [{ blockHash: 1 }, "blockHash: expected a hex string, got number"],
    [{ blockNumber: 1 }, "blockNumber: expected a block number or tag, got number"],
    [{ blockNumber: H }, "blockNumber: hex number > 64 bits"],
    [
      { blockNumber: "Latest" },
      `blockNumber: invalid block tag "Latest", want ${TAGS} or a hex block number`,
    ],
    [{ blockHash: H, requireCanonical: "yes" }, "requireCanonical must be a boolean, got string"],
    [
      { blockNumber: "0x0", requireCanonical: true },
      "requireCanonical is only allowed with blockHash",
    ],
    [{ blockNumber: "0x0", number: "0x0" }, 'unknown block selector field "number"'],
    [`0X${"ab".repeat(32)}`, "hex string without 0x prefix"],
    ...numberOrTagStrings,
  ] as Bad[],
  slot: [
    ...wrongTypes("a hex string", true),
    ["0x", 'hex string "0x" has no digits'],
    ["0x00", "hex string has leading zero digits"],
    ["0xzz", "invalid hex string"],
    ["3", "hex string without 0x prefix"],
    [`0x1${"0".repeat(64)}`, "hex number > 256 bits"],
  ] as Bad[],
  storageKeys: [
    ["0x0", "expected an array of storage keys, got string"],
    [{}, "expected an array of storage keys, got object"],
    [null, "expected an array of storage keys, got null"],
    [[1], "storageKeys[0]: expected a hex string, got number"],
    [[H, `0x${"11".repeat(33)}`], "storageKeys[1]: hex string too long: 33 bytes, want at most 32"],
    [["0x0g"], "storageKeys[0]: invalid hex string"],
    [["00"], "storageKeys[0]: hex string without 0x prefix"],
  ] as Bad[],
  call: [
    ...wrongTypes("a call object", true).filter(([v]) => !isEmptyObject(v)),
    ["0x", "expected a call object, got string"],
    [{ to: `0x${"11".repeat(19)}` }, "to: hex string has length 38, want 40 for address"],
    [{ to: `0x${"11".repeat(21)}` }, "to: hex string has length 42, want 40 for address"],
    [{ to: 1 }, "to: expected a hex string, got number"],
    [{ to: A, from: "0x12" }, "from: hex string has length 2, want 40 for address"],
    [{ to: A, gas: 21000 }, "gas: expected a hex string, got number"],
    [{ to: A, gas: "0x00" }, "gas: hex string has leading zero digits"],
    [{ to: A, gas: `0x1${"0".repeat(16)}` }, "gas: hex number > 64 bits"],
    [{ to: A, gasPrice: true }, "gasPrice: expected a hex string, got boolean"],
    [{ to: A, value: "1" }, "value: hex string without 0x prefix"],
    [{ to: A, value: `0x1${"0".repeat(64)}` }, "value: hex number > 256 bits"],
    [{ to: A, data: "0x1" }, "data: hex string of odd length"],
    [{ to: A, data: "0xzz" }, "data: invalid hex string"],
    [{ to: A, input: 5 }, "input: expected a hex string, got number"],
    [{ to: A, data: "0x01", input: "0x02" }, "data and input are both given and differ"],
  ] as Bad[],
} as const;

function isEmptyObject(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

type Kind = keyof typeof kinds;

/** Each method's parameters: their kinds, a valid value of each, how many are required. */
const SIGNATURES: readonly (readonly [
  method: string,
  args: readonly (readonly [Kind, unknown])[],
  required: number,
])[] = [
  [
    "eth_getBalance",
    [
      ["address", A],
      ["selector", "latest"],
    ],
    1,
  ],
  [
    "eth_getTransactionCount",
    [
      ["address", A],
      ["selector", "latest"],
    ],
    1,
  ],
  [
    "eth_getCode",
    [
      ["address", A],
      ["selector", "latest"],
    ],
    1,
  ],
  [
    "eth_getStorageAt",
    [
      ["address", A],
      ["slot", "0x0"],
      ["selector", "latest"],
    ],
    2,
  ],
  [
    "eth_getProof",
    [
      ["address", A],
      ["storageKeys", []],
      ["selector", "latest"],
    ],
    2,
  ],
  [
    "eth_getBlockByHash",
    [
      ["hash", H],
      ["fullTransactions", false],
    ],
    1,
  ],
  [
    "eth_getBlockByNumber",
    [
      ["numberOrTag", "latest"],
      ["fullTransactions", false],
    ],
    1,
  ],
  ["eth_getBlockTransactionCountByHash", [["hash", H]], 1],
  ["eth_getBlockTransactionCountByNumber", [["numberOrTag", "latest"]], 1],
  ["eth_getUncleCountByBlockHash", [["hash", H]], 1],
  ["eth_getUncleCountByBlockNumber", [["numberOrTag", "latest"]], 1],
  [
    "eth_getUncleByBlockHashAndIndex",
    [
      ["hash", H],
      ["index", "0x0"],
    ],
    2,
  ],
  [
    "eth_getUncleByBlockNumberAndIndex",
    [
      ["numberOrTag", "latest"],
      ["index", "0x0"],
    ],
    2,
  ],
  ["eth_getTransactionByHash", [["hash", H]], 1],
  [
    "eth_getTransactionByBlockHashAndIndex",
    [
      ["hash", H],
      ["index", "0x0"],
    ],
    2,
  ],
  [
    "eth_getTransactionByBlockNumberAndIndex",
    [
      ["numberOrTag", "latest"],
      ["index", "0x0"],
    ],
    2,
  ],
  ["eth_getTransactionReceipt", [["hash", H]], 1],
  ["eth_sendRawTransaction", [["raw", "0x00"]], 1],
  [
    "eth_call",
    [
      ["call", { to: A }],
      ["selector", "latest"],
    ],
    1,
  ],
  [
    "eth_estimateGas",
    [
      ["call", { to: A }],
      ["selector", "latest"],
    ],
    1,
  ],
  ["nodex_getRawBlockHeaderByHash", [["hash", H]], 1],
  ["nodex_getRawBlockHeaderByNumber", [["numberOrTag", "latest"]], 1],
  ["nodex_getRawTransactionReceiptByHash", [["hash", H]], 1],
];

type Row = readonly [method: string, params: unknown[], message: string];

/** Each argument replaced in turn by each malformed value of its kind. */
const malformed: Row[] = SIGNATURES.flatMap(([method, args]) =>
  args.flatMap(([kind], i) =>
    kinds[kind].map(([value, reason]): Row => {
      const params = args.map(([, valid]) => valid);
      params[i] = value;
      return [method, params, `invalid argument ${i}: ${reason}`];
    }),
  ),
);

/** Too few and too many arguments. */
const arity: Row[] = [
  ...SIGNATURES.flatMap(([method, args, required]) => [
    ...Array.from(
      { length: required },
      (_, missing): Row => [
        method,
        args.slice(0, missing).map(([, valid]) => valid),
        `missing value for required argument ${missing}`,
      ],
    ),
    [
      method,
      [...args.map(([, valid]) => valid), "0x0"],
      `too many arguments, want at most ${args.length}`,
    ] as Row,
  ]),
  ["eth_getLogs", [], "missing value for required argument 0"],
  ["eth_getLogs", [{}, {}], "too many arguments, want at most 1"],
  ["eth_blockNumber", ["latest"], "too many arguments, want at most 0"],
  ["eth_blockNumber", [null], "too many arguments, want at most 0"],
];

describe("malformed parameters of every chain method answer -32602 naming the argument", () => {
  it.each([...malformed, ...arity])("%s %j", async (method, params, message) => {
    const res = await call(node.url, method, fill(params));
    expect(res).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message } });
  });
});

describe("eth_getLogs filters", () => {
  it.each([
    [1, "expected a filter object, got number"],
    [null, "expected a filter object, got null"],
    [[], "expected a filter object, got array"],
    ["latest", "expected a filter object, got string"],
    [true, "expected a filter object, got boolean"],
    [{ from: "0x0" }, 'unknown filter field "from"'],
    [{ blockHash: H, toBlock: "latest" }, "cannot specify both blockHash and fromBlock/toBlock"],
    [
      { blockHash: H, fromBlock: "0x0", toBlock: "0x0" },
      "cannot specify both blockHash and fromBlock/toBlock",
    ],
    [{ blockHash: H31 }, "blockHash: hex string has length 62, want 64 for hash"],
    [{ blockHash: 1 }, "blockHash: expected a hex string, got number"],
    [{ fromBlock: 1 }, "fromBlock: expected a block number or tag, got number"],
    [{ toBlock: true }, "toBlock: expected a block number or tag, got boolean"],
    [
      { fromBlock: "Latest" },
      `fromBlock: invalid block tag "Latest", want ${TAGS} or a hex block number`,
    ],
    [{ fromBlock: "0x00" }, "fromBlock: hex string has leading zero digits"],
    [{ toBlock: H }, "toBlock: hex number > 64 bits"],
    [
      { fromBlock: { blockNumber: "0x0" } },
      "fromBlock: expected a block number or tag, got object",
    ],
    [{ address: 1 }, "address: expected a hex string, got number"],
    [{ address: {} }, "address: expected a hex string, got object"],
    [
      { address: [`0x${"11".repeat(19)}`] },
      "address[0]: hex string has length 38, want 40 for address",
    ],
    [{ address: [A, 1] }, "address[1]: expected a hex string, got number"],
    [{ topics: {} }, "topics: expected an array, got object"],
    [{ topics: H }, "topics: expected an array, got string"],
    [{ topics: [H, H, H, H, H] }, "topics: at most 4 positions"],
    [{ topics: [1] }, "topics[0]: expected a hex string, got number"],
    [{ topics: [{}] }, "topics[0]: expected a hex string, got object"],
    [{ topics: [null, H31] }, "topics[1]: hex string has length 62, want 64 for hash"],
    [{ topics: [[H, 1]] }, "topics[0][1]: expected a hex string, got number"],
    [{ topics: [null, [H, [H]]] }, "topics[1][1]: expected a hex string, got array"],
    [{ topics: [["0x1"]] }, "topics[0][0]: hex string of odd length"],
  ])("refuses %j with -32602", async (filter, reason) => {
    const res = await call(node.url, "eth_getLogs", [filter]);
    expect(res.error).toEqual({ code: -32602, message: `invalid argument 0: ${reason}` });
  });

  it.each([
    [{ fromBlock: PAST_HEAD }, "invalid block range: fromBlock 0x1 is after toBlock 0x0"],
    [
      { fromBlock: MAX_U64, toBlock: "earliest" },
      "invalid block range: fromBlock 0xffffffffffffffff is after toBlock 0x0",
    ],
    [{ fromBlock: PAST_HEAD, toBlock: MAX_U64 }, "block range extends beyond current head block"],
  ])("refuses the range of %j with -32602", async (filter, message) => {
    const res = await call(node.url, "eth_getLogs", [filter]);
    expect(res.error).toEqual({ code: -32602, message });
  });

  it.each([
    { fromBlock: "0x0", toBlock: MAX_U64 },
    { fromBlock: "earliest", toBlock: "pending" },
    { fromBlock: "safe", toBlock: "finalized" },
    { blockHash: null, fromBlock: "0x0", address: [], topics: [null, [], null, null] },
  ])("finds nothing in %j", async (filter) => {
    expect((await call(node.url, "eth_getLogs", [filter])).result).toEqual([]);
  });
});

describe("blocks that do not exist", () => {
  it.each([
    ["eth_getBlockByNumber", [PAST_HEAD]],
    ["eth_getBlockByNumber", [MAX_U64, true]],
    ["eth_getBlockByHash", [H, true]],
    ["eth_getBlockTransactionCountByNumber", [PAST_HEAD]],
    ["eth_getUncleCountByBlockNumber", [PAST_HEAD]],
    ["eth_getUncleByBlockNumberAndIndex", [PAST_HEAD, "0x0"]],
    ["eth_getUncleByBlockNumberAndIndex", ["0x0", "0x0"]],
    ["eth_getUncleByBlockHashAndIndex", [H, "0x0"]],
    ["eth_getUncleByBlockHashAndIndex", [GENESIS, MAX_U64]],
    ["eth_getTransactionByBlockNumberAndIndex", [PAST_HEAD, "0x0"]],
    ["eth_getTransactionByBlockNumberAndIndex", ["latest", "0x0"]],
    ["eth_getTransactionByBlockNumberAndIndex", ["earliest", `0x${"f".repeat(64)}`]],
    ["eth_getTransactionByBlockHashAndIndex", [H, "0x0"]],
    ["eth_getTransactionByBlockHashAndIndex", [GENESIS, "0x0"]],
    ["nodex_getRawBlockHeaderByNumber", [PAST_HEAD]],
    ["nodex_getRawBlockHeaderByNumber", [MAX_U64]],
    ["nodex_getRawTransactionReceiptByHash", [H]],
  ])("%s %j is null", async (method, params) => {
    const res = await call(node.url, method, fill(params));
    expect(res).toEqual({ jsonrpc: "2.0", id: 1, result: null });
  });

  it.each([
    ["eth_getBalance", [A, PAST_HEAD], "block 0x1 not found"],
    ["eth_getBalance", [A, MAX_U64], "block 0xffffffffffffffff not found"],
    ["eth_getBalance", [A, { blockNumber: PAST_HEAD }], "block 0x1 not found"],
    ["eth_getBalance", [A, H], `block ${H} not found`],
    ["eth_getBalance", [A, { blockHash: H }], `block ${H} not found`],
    ["eth_getBalance", [A, { blockHash: H, requireCanonical: true }], `block ${H} not found`],
    ["eth_getTransactionCount", [A, PAST_HEAD], "block 0x1 not found"],
    ["eth_getTransactionCount", [A, { blockHash: H }], `block ${H} not found`],
    ["eth_getCode", [A, PAST_HEAD], "block 0x1 not found"],
    ["eth_getCode", [A, H], `block ${H} not found`],
    ["eth_getStorageAt", [A, "0x0", PAST_HEAD], "block 0x1 not found"],
    ["eth_getStorageAt", [A, "0x0", { blockHash: H }], `block ${H} not found`],
    ["eth_getProof", [A, [], PAST_HEAD], "block 0x1 not found"],
    ["eth_call", [{ to: A }, PAST_HEAD], "block 0x1 not found"],
    ["eth_call", [{ to: A }, { blockHash: H }], `block ${H} not found`],
    ["eth_estimateGas", [{ to: A }, PAST_HEAD], "block 0x1 not found"],
    ["eth_estimateGas", [{ to: A }, H], `block ${H} not found`],
  ])("%s %j needs the block's state: -32602 naming it", async (method, params, message) => {
    const res = await call(node.url, method, params);
    expect(res).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message } });
  });

  // `safe` and `finalized` name blocks a network-set depth below the head (docs/rpc.md): on
  // regtest, with both depths 0, the head itself. Every selector method takes them.
  it.each([
    ["eth_getCode", [A, "safe"]],
    ["eth_getStorageAt", [A, "0x0", { blockNumber: "finalized" }]],
    ["eth_getProof", [A, [], "finalized"]],
    ["eth_call", [{ to: A }, "safe"]],
    ["eth_estimateGas", [{ to: A }, "finalized"]],
    ["eth_getBlockByNumber", ["safe"]],
    ["eth_getBlockTransactionCountByNumber", ["finalized"]],
    ["eth_getUncleCountByBlockNumber", ["safe"]],
    ["eth_getUncleByBlockNumberAndIndex", ["finalized", "0x0"]],
    ["eth_getTransactionByBlockNumberAndIndex", ["safe", "0x0"]],
    ["nodex_getRawBlockHeaderByNumber", ["finalized"]],
  ])("%s %j takes the tag", async (method, params) => {
    const res = await call(node.url, method, params);
    expect(res.error).toBeUndefined();
    expect(res).toHaveProperty("result");
  });
});

describe("eth_sendRawTransaction of bytes that are no transaction", () => {
  it.each([
    ["0x", "invalid transaction: empty"],
    ["0xc0", "invalid transaction: expected 9 items, got 0"],
    ["0xc0c0", "invalid transaction: invalid RLP: remainder must be zero"],
    ["0xf9ffff", "invalid transaction: invalid RLP: total length is larger than the data"],
    [
      "0xc980808094",
      "invalid transaction: invalid RLP: an item is longer than the data that holds it",
    ],
    ["0x01c0", "invalid type 1 transaction: expected 11 items, got 0"],
    ["0x02c0", "invalid type 2 transaction: expected 12 items, got 0"],
    ["0x03c0", "transaction type 3 is not supported: send a legacy, type 1 or type 2 transaction"],
    ["0x7f", "transaction type 127 is not supported: send a legacy, type 1 or type 2 transaction"],
    [
      `0xc9${"80".repeat(9)}`,
      "invalid transaction signature: v 0 is neither 27, 28 nor an EIP-155 value",
    ],
  ])("%s answers -32602", async (raw, message) => {
    const res = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(res).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message } });
  });
});

describe("after all of it", () => {
  it("the node still answers, made no block and logged no failure", async () => {
    expect(await call(node.url, "eth_blockNumber")).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: "0x0",
    });
    expect(node.process.exitCode).toBeNull();
    expect(node.logs()).not.toContain("RPC method failed");
  });
});
