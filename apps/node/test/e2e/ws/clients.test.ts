import {
  Contract,
  getAddress,
  JsonRpcProvider,
  keccak256,
  type Log,
  toUtf8Bytes,
  Wallet,
  WebSocketProvider,
  zeroPadValue,
} from "ethers";
import {
  createPublicClient,
  defineChain,
  type PublicClient,
  type WebSocketTransport,
  webSocket,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3, WebSocketProvider as Web3WebSocketProvider } from "web3";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { connect, type WsClient } from "../helpers/ws.js";

// ethers, viem and web3.js unmodified, over a WebSocket to the node: new blocks, contract
// events in order with their arguments, plain requests, viem's keep-alive, web3.js's
// subscriptions, and the logs evm_revert takes away delivered again with removed: true.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const KEY1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const SENDER = new Wallet(KEY0).address;
const PING = keccak256(toUtf8Bytes("Ping(address,uint256)"));
const ABI = ["event Ping(address indexed from, uint256 value)"];
const VIEM_ABI = [
  {
    type: "event",
    name: "Ping",
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  },
] as const;
/** Runtime: mstore(0, calldataload(0)); log2(0, 32, Ping(address,uint256), caller); stop. */
const RUNTIME = `0x600035600052337f${PING.slice(2)}60206000a200`;
const WAIT_MS = 5000;

const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const hex = (n: number | bigint) => `0x${n.toString(16)}`;
const show = (value: unknown) =>
  JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));

/** What a listener heard, in order; `take(n)` waits (at most WAIT_MS) until there are n. */
class Heard<T> {
  readonly items: T[] = [];
  readonly #wakes = new Set<() => void>();
  constructor(readonly what: string) {}

  push = (item: T): void => {
    this.items.push(item);
    for (const wake of this.#wakes) wake();
  };

  until<R>(check: () => R | undefined, what: string, ms = WAIT_MS): Promise<R> {
    return new Promise((resolve, reject) => {
      const done = check();
      if (done !== undefined) return resolve(done);
      const wake = () => {
        const found = check();
        if (found === undefined) return;
        clearTimeout(timer);
        this.#wakes.delete(wake);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.#wakes.delete(wake);
        reject(
          new Error(
            `timed out after ${ms} ms waiting for ${what}; ${this.items.length} ${this.what} so far: ${show(this.items).slice(-1500)}`,
          ),
        );
      }, ms);
      this.#wakes.add(wake);
    });
  }

  take(count: number, ms = WAIT_MS): Promise<T[]> {
    return this.until(
      () => (this.items.length >= count ? this.items.slice(0, count) : undefined),
      `${count} ${this.what}`,
      ms,
    );
  }
}

type Message = Record<string, unknown> & { id?: unknown; method?: string; params?: unknown[] };

/** The messages a client library's socket sent and received, tapped on the socket itself. */
interface Wire {
  readonly sent: Message[];
  /** Each received message, parsed, and its exact text. */
  readonly received: Heard<{ msg: Message; text: string }>;
}

interface TappableSocket {
  send(data: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
}

function tap(socket: unknown): Wire {
  const s = socket as TappableSocket;
  const wire: Wire = { sent: [], received: new Heard("messages received") };
  const send = s.send.bind(s);
  s.send = (data: string) => {
    const parsed = JSON.parse(data) as Message | Message[];
    wire.sent.push(...(Array.isArray(parsed) ? parsed : [parsed]));
    send(data);
  };
  s.addEventListener("message", (event) => {
    const text = String(event.data);
    wire.received.push({ msg: JSON.parse(text) as Message, text });
  });
  return wire;
}

/** The id of the answer to the `index`-th request of `method` whose params match. */
function answered(
  wire: Wire,
  method: string,
  params: (p: unknown[]) => boolean = () => true,
  index = 0,
): Promise<Message> {
  return wire.received.until(() => {
    const sent = wire.sent.filter((m) => m.method === method && params(m.params ?? []))[index];
    if (sent === undefined) return undefined;
    return wire.received.items.find((r) => r.msg.id === sent.id && r.msg.method === undefined)?.msg;
  }, `the answer to ${method}`);
}

/** Waits until the node answered the client's `eth_subscribe` of `kind`; its subscription id. */
async function subscribed(wire: Wire, kind: string, index = 0): Promise<string> {
  const answer = await answered(wire, "eth_subscribe", (p) => p[0] === kind, index);
  expect(answer.error).toBeUndefined();
  expect(answer.result).toMatch(/^0x[0-9a-f]+$/);
  return answer.result as string;
}

let node: RunningNode;
let wsUrl: string;
let sender: Wallet;
let emitter: string;
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  node = await startNode();
  wsUrl = node.url.replace(/^http/, "ws");
  const http = new JsonRpcProvider(node.url, 33, {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  closers.push(() => http.destroy());
  sender = new Wallet(KEY0, http);
  emitter = (await (await sender.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
    .contractAddress!;
});
afterAll(async () => {
  for (const close of closers.reverse()) {
    try {
      await close();
    } catch {
      // Already closed by its test.
    }
  }
  await node?.stop();
});

async function ok(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

/** Calls the emitter over HTTP (one block each: regtest mines every transaction). */
async function ping(value: number) {
  const tx = await sender.sendTransaction({ to: emitter, data: word(value), gasLimit: 60_000n });
  const receipt = (await tx.wait())!;
  expect(receipt.logs).toHaveLength(1);
  return receipt;
}

async function mine(count: number): Promise<number> {
  const from = Number(await ok("eth_blockNumber"));
  for (let i = 0; i < count; i++) await ok("evm_mine");
  return from;
}

describe("ethers v6 WebSocketProvider", () => {
  let provider: WebSocketProvider;
  let wire: Wire;
  beforeAll(() => {
    provider = new WebSocketProvider(wsUrl, 33, { staticNetwork: true, cacheTimeout: -1 });
    closers.push(() => provider.destroy());
    wire = tap(provider.websocket);
  });

  it('provider.on("block") hears each mined block once, numbers consecutive', async () => {
    const blocks = new Heard<number>("block events");
    await provider.on("block", blocks.push);
    await subscribed(wire, "newHeads");
    const from = await mine(3);
    expect(await blocks.take(3)).toEqual([from + 1, from + 2, from + 3]);
    await provider.off("block");
    expect((await answered(wire, "eth_unsubscribe")).result).toBe(true);
    expect(blocks.items).toHaveLength(3);
  });

  it('contract.on("Ping") hears the events in order, with their arguments', async () => {
    const contract = new Contract(emitter, ABI, provider);
    const heard = new Heard<Record<string, unknown>>("Ping events");
    await contract.on("Ping", (from: string, value: bigint, event: { log: Log }) =>
      heard.push({
        from,
        value,
        blockNumber: event.log.blockNumber,
        transactionHash: event.log.transactionHash,
        removed: event.log.removed,
      }),
    );
    await subscribed(wire, "logs");
    const receipts = [await ping(11), await ping(12), await ping(13)];
    expect(await heard.take(3)).toEqual(
      receipts.map((r, i) => ({
        from: SENDER,
        value: BigInt(11 + i),
        blockNumber: r.blockNumber,
        transactionHash: r.hash,
        removed: false,
      })),
    );
    await contract.removeAllListeners();
    expect(heard.items).toHaveLength(3);
  });

  it("answers requests over the socket: getBalance, a Wallet's transfer, tx.wait()", async () => {
    const to = "0x000000000000000000000000000000000000bEEF";
    expect(await provider.getBalance(to)).toBe(0n);
    const wallet = new Wallet(KEY1, provider);
    const tx = await wallet.sendTransaction({ to, value: 12_345n });
    const receipt = await tx.wait();
    expect(receipt?.status).toBe(1);
    expect(receipt?.hash).toBe(tx.hash);
    expect(await provider.getBalance(to)).toBe(12_345n);
    expect(await ok("eth_getBalance", [to, "latest"])).toBe(hex(12_345));
    // It all went over the socket.
    const methods = wire.sent.map((m) => m.method);
    expect(methods).toContain("eth_sendRawTransaction");
    expect(methods).toContain("eth_getBalance");
  });
});

describe("viem webSocket transport", () => {
  const chain = defineChain({
    id: 33,
    name: "Nodex regtest",
    nativeCurrency: { name: "Bitcoin", symbol: "RBTC", decimals: 18 },
    rpcUrls: { default: { http: [] } },
  });
  let client: PublicClient<WebSocketTransport, typeof chain>;
  let wire: Wire;
  beforeAll(async () => {
    const transport = webSocket(wsUrl);
    client = createPublicClient({ chain, transport });
    const rpc = await client.transport.getRpcClient();
    closers.push(() => rpc.close());
    wire = tap(rpc.socket);
  });

  it("watchBlocks with poll: false subscribes to newHeads and hears each block in order", async () => {
    const blocks = new Heard<bigint>("blocks");
    const errors: unknown[] = [];
    const unwatch = client.watchBlocks({
      poll: false,
      onBlock: (block) => blocks.push(block.number),
      onError: (err) => errors.push(err),
    });
    try {
      await subscribed(wire, "newHeads");
      const from = BigInt(await mine(3));
      expect(await blocks.take(3)).toEqual([from + 1n, from + 2n, from + 3n]);
      expect(errors).toEqual([]);
    } finally {
      unwatch();
    }
    expect((await answered(wire, "eth_unsubscribe")).result).toBe(true);
    expect(wire.sent.filter((m) => m.method === "eth_newBlockFilter")).toEqual([]);
  });

  it("watchContractEvent with poll: false hears the events in order, decoded", async () => {
    const logs = new Heard<Record<string, unknown>>("Ping logs");
    const errors: unknown[] = [];
    const unwatch = client.watchContractEvent({
      address: emitter as `0x${string}`,
      abi: VIEM_ABI,
      eventName: "Ping",
      poll: false,
      onLogs: (batch) => {
        for (const log of batch)
          logs.push({
            eventName: log.eventName,
            args: log.args,
            blockNumber: log.blockNumber,
            transactionHash: log.transactionHash,
            removed: log.removed,
          });
      },
      onError: (err) => errors.push(err),
    });
    try {
      const sub = await subscribed(wire, "logs");
      const request = wire.sent.find(
        (m) => m.method === "eth_subscribe" && m.params?.[0] === "logs",
      );
      expect(request?.params?.[1]).toEqual({ address: emitter, topics: [PING] });
      expect(sub).toBeTypeOf("string");
      const receipts = [await ping(21), await ping(22), await ping(23)];
      expect(await logs.take(3)).toEqual(
        receipts.map((r, i) => ({
          eventName: "Ping",
          args: { from: SENDER, value: BigInt(21 + i) },
          blockNumber: BigInt(r.blockNumber),
          transactionHash: r.hash,
          removed: false,
        })),
      );
      expect(errors).toEqual([]);
    } finally {
      unwatch();
    }
  });

  it('keepAlive: { interval: 200 } gets net_version answered with "33", id null, while a watch runs', async () => {
    const keepAlive = createPublicClient({
      chain,
      transport: webSocket(wsUrl, { keepAlive: { interval: 200 } }),
    });
    const rpc = await keepAlive.transport.getRpcClient();
    closers.push(() => rpc.close());
    const kwire = tap(rpc.socket);
    const blocks = new Heard<bigint>("blocks");
    const errors: unknown[] = [];
    const unwatch = keepAlive.watchBlocks({
      poll: false,
      onBlock: (block) => blocks.push(block.number),
      onError: (err) => errors.push(err),
    });
    try {
      await subscribed(kwire, "newHeads");
      const pong = '{"jsonrpc":"2.0","id":null,"result":"33"}';
      await kwire.received.until(
        () => (kwire.received.items.filter((r) => r.text === pong).length >= 3 ? true : undefined),
        "3 answers to the keep-alive",
      );
      const pings = kwire.sent.filter((m) => m.id === null);
      expect(pings.length).toBeGreaterThanOrEqual(3);
      expect(pings[0]).toEqual({ jsonrpc: "2.0", id: null, method: "net_version", params: [] });
      // Every message that is not an answer to a numbered request nor a notification is a pong.
      const others = kwire.received.items.filter(
        (r) => typeof r.msg.id !== "number" && r.msg.method !== "eth_subscription",
      );
      expect(new Set(others.map((r) => r.text))).toEqual(new Set([pong]));
      const from = BigInt(await mine(1));
      expect(await blocks.take(1)).toEqual([from + 1n]);
      expect(await keepAlive.getChainId()).toBe(33);
      expect(errors).toEqual([]);
    } finally {
      unwatch();
    }
  });
});

describe("web3.js v4 WebSocketProvider", () => {
  let web3: Web3;
  let wire: Wire;
  beforeAll(() => {
    const provider = new Web3WebSocketProvider(wsUrl);
    wire = tap(provider.SocketConnection);
    closers.push(() => provider.disconnect());
    web3 = new Web3(provider);
  });

  it("answers requests over the socket", async () => {
    expect(await web3.eth.getChainId()).toBe(33n);
    expect(await web3.eth.getBlockNumber()).toBe(BigInt((await ok("eth_blockNumber")) as string));
    expect(wire.sent.map((m) => m.method)).toEqual(
      expect.arrayContaining(["eth_chainId", "eth_blockNumber"]),
    );
  });

  it('subscribe("newBlockHeaders") sends newHeads and hears each block\'s header', async () => {
    const sub = await web3.eth.subscribe("newBlockHeaders");
    const heads = new Heard<{ number?: unknown; hash?: unknown }>("headers");
    const errors: unknown[] = [];
    sub.on("data", heads.push);
    sub.on("error", (err) => {
      errors.push(err);
    });
    // web3.js 4 sends the canonical name for its 1.x alias.
    expect(await subscribed(wire, "newHeads")).toBe(sub.id);
    const from = await mine(2);
    const got = await heads.take(2);
    expect(got.map((h) => h.number)).toEqual([BigInt(from + 1), BigInt(from + 2)]);
    for (const head of got) {
      const block = (await ok("eth_getBlockByNumber", [hex(head.number as bigint), false])) as {
        hash: string;
      };
      expect(head.hash).toBe(block.hash);
    }
    await sub.unsubscribe();
    expect(errors).toEqual([]);
  });

  it('subscribe("logs", {address, topics}) hears the matching logs in order', async () => {
    const sub = await web3.eth.subscribe("logs", { address: emitter, topics: [PING] });
    const logs = new Heard<Record<string, unknown>>("logs");
    const errors: unknown[] = [];
    sub.on("data", (log) => logs.push(log as unknown as Record<string, unknown>));
    sub.on("error", (err) => {
      errors.push(err);
    });
    // A log of the same event from another address is not sent.
    const other = (await (await sender.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
      .contractAddress!;
    await (await sender.sendTransaction({ to: other, data: word(30), gasLimit: 60_000n })).wait();
    const receipts = [await ping(31), await ping(32)];
    const got = await logs.take(2);
    expect(
      got.map((l) => [l.address, l.data, l.topics, l.blockNumber, l.transactionHash, l.removed]),
    ).toEqual(
      receipts.map((r, i) => [
        emitter.toLowerCase(),
        word(31 + i),
        [PING, zeroPadValue(SENDER, 32).toLowerCase()],
        BigInt(r.blockNumber),
        r.hash,
        false,
      ]),
    );
    await sub.unsubscribe();
    expect(errors).toEqual([]);
    expect(logs.items).toHaveLength(2);
  });

  it('subscribe("pendingTransactions") sends newPendingTransactions and hears the hashes', async () => {
    const sub = await web3.eth.subscribe("pendingTransactions");
    const hashes = new Heard<string>("transaction hashes");
    sub.on("data", (hash) => hashes.push(hash as string));
    expect(await subscribed(wire, "newPendingTransactions")).toBe(sub.id);
    const receipts = [await ping(41), await ping(42)];
    expect(await hashes.take(2)).toEqual(receipts.map((r) => r.hash));
    await sub.unsubscribe();
  });
});

describe("raw WebSocket", () => {
  let ws: WsClient;
  let texts: string[];
  beforeAll(async () => {
    ws = await connect(node.url);
    closers.push(() => ws.close());
    texts = [];
    ws.socket.on("message", (data) => texts.push(String(data)));
  });

  it('answers viem\'s keep-alive text with exactly {jsonrpc, id: null, result: "33"}', async () => {
    const at = ws.messages.length;
    ws.send('{"jsonrpc":"2.0","id":null,"method":"net_version","params":[]}');
    await ws.next((m) => m.id === null, WAIT_MS, at);
    expect(texts[at]).toBe('{"jsonrpc":"2.0","id":null,"result":"33"}');
  });

  it("takes web3.js 1.x's names: newBlockHeaders and pendingTransactions", async () => {
    const heads = (await ws.request("eth_subscribe", ["newBlockHeaders"])).result as string;
    const pending = (await ws.request("eth_subscribe", ["pendingTransactions"])).result as string;
    expect([heads, pending]).toEqual([expect.stringMatching(/^0x/), expect.stringMatching(/^0x/)]);
    const receipt = await ping(51);
    const [head] = (await ws.notifications(heads, 1)) as { number: string; hash: string }[];
    expect(head).toMatchObject({ number: hex(receipt.blockNumber), hash: receipt.blockHash });
    expect(await ws.notifications(pending, 1)).toEqual([receipt.hash]);
    expect((await ws.request("eth_unsubscribe", [heads])).result).toBe(true);
    expect((await ws.request("eth_unsubscribe", [pending])).result).toBe(true);
  });
});

describe("removed logs: evm_revert takes three blocks of logs away", () => {
  /** Snapshot, three pings (three blocks), revert; the receipts of the pings. */
  async function pingThenRevert(first: number, heard: () => Promise<unknown>) {
    const snapshot = await ok("evm_snapshot");
    const receipts = [await ping(first), await ping(first + 1), await ping(first + 2)];
    await heard();
    expect(await ok("evm_revert", [snapshot])).toBe(true);
    expect(Number(await ok("eth_blockNumber"))).toBe(receipts[0]!.blockNumber - 1);
    return receipts;
  }

  it("raw: the logs again with removed: true, lowest block first, then new logs", async () => {
    const ws = await connect(node.url);
    closers.push(() => ws.close());
    const sub = (await ws.request("eth_subscribe", ["logs", { address: emitter }]))
      .result as string;
    const receipts = await pingThenRevert(61, () => ws.notifications(sub, 3));
    const all = (await ws.notifications(sub, 6)) as Record<string, unknown>[];
    const added = all.slice(0, 3);
    expect(added.map((l) => [l.blockNumber, l.transactionHash, l.data, l.removed])).toEqual(
      receipts.map((r, i) => [hex(r.blockNumber), r.hash, word(61 + i), false]),
    );
    expect(all.slice(3)).toEqual(added.map((l) => ({ ...l, removed: true })));
    const again = await ping(64);
    const next = (await ws.notifications(sub, 7)) as Record<string, unknown>[];
    expect(next[6]).toMatchObject({
      blockNumber: hex(receipts[0]!.blockNumber),
      transactionHash: again.hash,
      data: word(64),
      removed: false,
    });
    expect((await ws.request("eth_unsubscribe", [sub])).result).toBe(true);
  });

  it("ethers: its socket gets them with removed: true; provider.on(filter) hears the added ones", async () => {
    const provider = new WebSocketProvider(wsUrl, 33, { staticNetwork: true, cacheTimeout: -1 });
    closers.push(() => provider.destroy());
    const wire = tap(provider.websocket);
    const logs = new Heard<Log>("logs");
    await provider.on({ address: emitter, topics: [PING] }, logs.push);
    const sub = await subscribed(wire, "logs");
    const receipts = await pingThenRevert(71, () => logs.take(3));
    const notes = () =>
      wire.received.items
        .filter((r) => (r.msg.params as { subscription?: string })?.subscription === sub)
        .map((r) => (r.msg.params as unknown as { result: Record<string, unknown> }).result);
    const removed = await wire.received.until(
      () => (notes().length >= 6 ? notes().slice(3) : undefined),
      "3 removed logs on ethers' socket",
    );
    expect(removed.map((l) => [l.blockNumber, l.transactionHash, l.removed])).toEqual(
      receipts.map((r) => [hex(r.blockNumber), r.hash, true]),
    );
    // ethers 6 turns a removed log into its "orphan" event instead of calling the filter's
    // listeners; one more log, emitted after those in order, shows none reached them.
    const again = await ping(74);
    const got = await logs.take(4);
    const shape = (l: Log) => ({
      address: l.address,
      blockNumber: l.blockNumber,
      blockHash: l.blockHash,
      transactionHash: l.transactionHash,
      data: l.data,
      removed: l.removed,
    });
    expect(got.map(shape)).toEqual(
      [...receipts, again].map((r, i) => ({
        address: getAddress(emitter),
        blockNumber: r.blockNumber,
        blockHash: r.blockHash,
        transactionHash: r.hash,
        data: word(71 + i),
        removed: false,
      })),
    );
    expect(again.blockNumber).toBe(receipts[0]!.blockNumber);
    await provider.removeAllListeners();
    expect(logs.items).toHaveLength(4);
  });

  it("viem watchContractEvent passes them on with removed: true", async () => {
    const client = createPublicClient({ transport: webSocket(wsUrl, { keepAlive: false }) });
    const rpc = await client.transport.getRpcClient();
    closers.push(() => rpc.close());
    const wire = tap(rpc.socket);
    const logs = new Heard<Record<string, unknown>>("logs");
    const errors: unknown[] = [];
    const unwatch = client.watchContractEvent({
      address: emitter as `0x${string}`,
      abi: VIEM_ABI,
      eventName: "Ping",
      poll: false,
      onLogs: (batch) => {
        for (const log of batch)
          logs.push({ value: log.args.value, blockNumber: log.blockNumber, removed: log.removed });
      },
      onError: (err) => errors.push(err),
    });
    try {
      await subscribed(wire, "logs");
      const receipts = await pingThenRevert(81, () => logs.take(3));
      const added = receipts.map((r, i) => ({
        value: BigInt(81 + i),
        blockNumber: BigInt(r.blockNumber),
        removed: false,
      }));
      expect(await logs.take(6)).toEqual([
        ...added,
        ...added.map((l) => ({ ...l, removed: true })),
      ]);
      expect(errors).toEqual([]);
    } finally {
      unwatch();
    }
  });
});
