import { keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { type RunningNode, send, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";
import {
  type RunningHaproxy,
  type RunningRedis,
  startHaproxy,
  startRedis,
} from "../helpers/services.js";

// One endpoint of several replicas: a producer mines (devnet, a block per transaction), and
// followers that sync from it over the peer-to-peer network serve JSON-RPC behind HAProxy
// (round-robin, health checks on /health), sharing one Redis for filters (`--redis`).
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PING = keccak256(toUtf8Bytes("Ping()"));
/** Runtime: mstore(0, 7); log1(0, 32, Ping()); stop. */
const RUNTIME = `0x60076000527f${PING.slice(2)}60206000a100`;

const nodes: RunningNode[] = [];
const balancers: RunningHaproxy[] = [];
let redis: RunningRedis;
let producer: RunningNode;
let followers: RunningNode[];
let lb: RunningHaproxy;
let contract: string;

afterAll(async () => {
  await Promise.all(balancers.map((b) => b.stop()));
  await Promise.all(nodes.map((n) => n.stop()));
  await redis?.stop();
});

async function start(host: string, args: string[] = []) {
  const node = await startNode({
    network: "--devnet",
    args: [
      "--p2p-host",
      host,
      "--p2p-port",
      "0",
      "--rpc-modules",
      "eth,net,web3,rpc,txpool,nodex,evm,sco",
      ...args,
    ],
  });
  nodes.push(node);
  return node;
}

let follower = 30;
/** A replica: follows the producer, shares filters through Redis. */
const startFollower = () =>
  start(`127.0.0.${follower++}`, [
    "--no-automine",
    "--bootnodes",
    p2pAddress(producer),
    "--redis",
    redis.url,
  ]);

async function balancer(replicas: RunningNode[]) {
  const b = await startHaproxy(replicas.map((r) => ({ port: r.port })));
  balancers.push(b);
  await until("HAProxy to see every replica up", async () => {
    const servers = Object.values(await b.servers());
    return servers.length === replicas.length && servers.every((s) => s === "UP")
      ? true
      : undefined;
  });
  return b;
}

/** A call through the balancer: the response and the replica that answered it. */
async function viaBalancer(url: string, method: string, params: unknown[] = []) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method}: HTTP ${res.status} ${text}`);
  const body = JSON.parse(text) as { result?: unknown; error?: { code: number; message: string } };
  return { ...body, servedBy: res.headers.get("x-served-by") ?? "?" };
}

async function result(url: string, method: string, params: unknown[] = []) {
  const res = await viaBalancer(url, method, params);
  if (res.error !== undefined) throw new Error(`${method} answered ${JSON.stringify(res.error)}`);
  return { value: res.result, servedBy: res.servedBy };
}

const headHash = async (node: RunningNode) =>
  ((await rpc(node, "eth_getBlockByNumber", ["latest", false])) as { hash: string }).hash;

/** Waits until every node has the producer's head; answers its hash. */
async function synced(of: RunningNode[]) {
  const target = await headHash(producer);
  await until("the replicas to follow the producer", async () =>
    (await Promise.all(of.map(headHash))).every((h) => h === target) ? true : undefined,
  );
  return target;
}

let nonce = 0;
const wallet = new Wallet(KEY0);
async function sendTx(fields: { to?: string | null; data?: string }) {
  const raw = await wallet.signTransaction({
    to: fields.to ?? null,
    data: fields.data ?? "0x",
    value: 0n,
    nonce: nonce++,
    gasLimit: 200_000n,
    gasPrice: 100_000_000n,
    chainId: 32n,
    type: 0,
  });
  const hash = (await rpc(producer, "eth_sendRawTransaction", [raw])) as string;
  const receipt = (await until("the receipt", async () => {
    const r = await rpc(producer, "eth_getTransactionReceipt", [hash]);
    return r === null ? undefined : r;
  })) as { blockHash: string; blockNumber: string; contractAddress: string | null };
  return { hash, ...receipt };
}

/** The producer's block hashes after block `after` (a hash) up to its head, lowest first. */
async function blocksAfter(after: string): Promise<string[]> {
  const from = Number(
    ((await rpc(producer, "eth_getBlockByHash", [after, false])) as { number: string }).number,
  );
  const head = Number(await rpc(producer, "eth_blockNumber"));
  const out: string[] = [];
  for (let n = from + 1; n <= head; n++)
    out.push(
      (
        (await rpc(producer, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as {
          hash: string;
        }
      ).hash,
    );
  return out;
}

type Log = { transactionHash: string; removed: boolean; blockHash: string };

describe("replicas behind HAProxy sharing filters through Redis", () => {
  beforeAll(async () => {
    redis = await startRedis();
    producer = await start("127.0.0.29", ["--redis", redis.url]);
    followers = [await startFollower(), await startFollower()];
    await until("both followers connected", async () =>
      (await rpc(producer, "net_peerCount")) === "0x2" ? true : undefined,
    );
    const deployed = await sendTx({ data: deployCode(RUNTIME) });
    contract = deployed.contractAddress!;
    lb = await balancer(followers);
  }, 90_000);

  it("a filter polled through the balancer, replicas in turn, gets every change once", async () => {
    const installedAt = await synced(followers);
    const logFilter = await result(lb.url, "eth_newFilter", [{ address: contract }]);
    const blockFilter = await result(lb.url, "eth_newBlockFilter");
    const served = new Set<string>([logFilter.servedBy, blockFilter.servedBy]);
    const logs: Log[] = [];
    const blocks: string[] = [];
    const poll = async () => {
      const l = await result(lb.url, "eth_getFilterChanges", [logFilter.value]);
      const b = await result(lb.url, "eth_getFilterChanges", [blockFilter.value]);
      logs.push(...(l.value as Log[]));
      blocks.push(...(b.value as string[]));
      served.add(l.servedBy).add(b.servedBy);
    };
    const pings: string[] = [];
    for (let i = 0; i < 6; i++) {
      pings.push((await sendTx({ to: contract })).hash);
      // Polled at once: a follower may not have the block yet, and answers nothing rather
      // than anything wrong.
      await poll();
    }
    await synced(followers);
    for (let i = 0; i < 4; i++) await poll();
    expect(served).toEqual(new Set(["r0", "r1"]));
    expect(logs.map((l) => l.transactionHash)).toEqual(pings);
    expect(logs.every((l) => l.removed === false)).toBe(true);
    expect(blocks).toEqual(await blocksAfter(installedAt));
    // eth_getFilterLogs through either replica: every log of the filter's range (latest only).
    const all = await result(lb.url, "eth_getFilterLogs", [logFilter.value]);
    expect((all.value as Log[]).map((l) => l.transactionHash)).toEqual([pings.at(-1)]);
  }, 90_000);

  it("a pending-transaction filter polled through the balancer sees each transaction once", async () => {
    const filter = (await result(lb.url, "eth_newPendingTransactionFilter")).value;
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) sent.push((await sendTx({ to: contract })).hash);
    await synced(followers);
    const seen: string[] = [];
    const served = new Set<string>();
    await until("the three transactions", async () => {
      const got = await result(lb.url, "eth_getFilterChanges", [filter]);
      seen.push(...(got.value as string[]));
      served.add(got.servedBy);
      return seen.length >= 3 && served.size === 2 ? true : undefined;
    });
    expect(seen).toEqual(sent);
    expect((await result(lb.url, "eth_getFilterChanges", [filter])).value).toEqual([]);
  }, 60_000);

  it("a filter outlives the replica it was installed through", async () => {
    const installedAt = await synced(followers);
    const logFilter = await result(lb.url, "eth_newFilter", [{ address: contract }]);
    const blockFilter = await result(lb.url, "eth_newBlockFilter");
    const gone = followers[Number(logFilter.servedBy.slice(1))]!;
    const survivor = followers.find((f) => f !== gone)!;
    await gone.stop();
    const pings = [(await sendTx({ to: contract })).hash, (await sendTx({ to: contract })).hash];
    await synced([survivor]);
    const logs = (await result(lb.url, "eth_getFilterChanges", [logFilter.value])).value as Log[];
    expect(logs.map((l) => l.transactionHash)).toEqual(pings);
    expect((await result(lb.url, "eth_getFilterChanges", [blockFilter.value])).value).toEqual(
      await blocksAfter(installedAt),
    );
    expect((await result(lb.url, "eth_getFilterChanges", [logFilter.value])).value).toEqual([]);
    expect((await result(lb.url, "eth_uninstallFilter", [logFilter.value])).value).toBe(true);
    expect((await result(lb.url, "eth_uninstallFilter", [logFilter.value])).value).toBe(false);
    followers = [survivor, await startFollower()];
    await synced(followers);
  }, 90_000);

  it("a reorganization between replicas: the replica that never saw the lost block gives its logs back as removed", async () => {
    const [a, b] = followers as [RunningNode, RunningNode];
    await synced([a, b]);
    const host = (node: RunningNode) => /\/ip4\/([\d.]+)\//.exec(p2pAddress(node))![1]!;
    const cut = [
      [b, [host(producer), host(a)]],
      [producer, [host(b)]],
      [a, [host(b)]],
    ] as const;
    const filter = (await rpc(b, "eth_newFilter", [{ address: contract }])) as string;
    for (const [node, others] of cut)
      for (const address of others) await rpc(node, "sco_banAddress", [address]);
    await until("B alone", async () =>
      (await rpc(b, "net_peerCount")) === "0x0" ? true : undefined,
    );
    // The light side: B makes one block with a log of a sender of its own.
    const other = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    const lightTx = await other.signTransaction({
      to: contract,
      nonce: 0,
      gasLimit: 200_000n,
      gasPrice: 100_000_000n,
      chainId: 32n,
      type: 0,
    });
    await rpc(b, "eth_sendRawTransaction", [lightTx]);
    await rpc(b, "evm_mine");
    const light = (await rpc(b, "eth_getFilterChanges", [filter])) as Log[];
    expect(light.map((l) => l.removed)).toEqual([false]);
    // The heavy side: the producer makes three, which A follows.
    const heavy = [];
    for (let i = 0; i < 3; i++) heavy.push((await sendTx({ to: contract })).hash);
    await synced([a]);
    // Polled through A, which never had B's block: it comes back removed, from what Redis kept.
    const changes = (await rpc(a, "eth_getFilterChanges", [filter])) as Log[];
    expect(changes.map((l) => [l.transactionHash, l.removed])).toEqual([
      [light[0]!.transactionHash, true],
      ...heavy.map((h) => [h, false]),
    ]);
    expect(changes[0]).toEqual({ ...light[0], removed: true });
    // B, still on its side, is behind what was delivered: nothing.
    expect(await rpc(b, "eth_getFilterChanges", [filter])).toEqual([]);
    // Healed, B reorganizes onto the producer's chain; nothing is given twice.
    for (const [node, others] of cut)
      for (const address of others) await rpc(node, "sco_unbanAddress", [address]);
    await synced([a, b]);
    const seen = new Set(
      [...light, ...changes].map((l) => `${l.blockHash}/${l.transactionHash}/${l.removed}`),
    );
    const after = (await rpc(b, "eth_getFilterChanges", [filter])) as Log[];
    for (const l of after)
      expect(seen.has(`${l.blockHash}/${l.transactionHash}/${l.removed}`)).toBe(false);
  }, 120_000);

  it("a replica killed with SIGKILL mid-load costs only the requests it had in flight", async () => {
    const lb2 = await balancer(followers);
    const filter = (await result(lb2.url, "eth_newBlockFilter")).value;
    const victim = followers[1]!;
    type Outcome = { ok: boolean; failure?: string; startedAfterKill: boolean; servedBy?: string };
    const outcomes: Outcome[] = [];
    let killedAt: number | undefined;
    let afterKill = 0;
    const WORKERS = 4;
    const worker = async (w: number) => {
      for (let i = 0; afterKill < 200; i++) {
        const startedAfterKill = killedAt !== undefined;
        const method = i % 2 === 0 ? "eth_blockNumber" : "eth_getFilterChanges";
        const body = {
          jsonrpc: "2.0",
          id: `${w}-${i}`,
          method,
          params: method === "eth_blockNumber" ? [] : [filter],
        };
        let outcome: Outcome;
        try {
          const res = await send(lb2.url, body);
          const json = res.json as { result?: unknown };
          const servedBy = res.headers.get("x-served-by") ?? "?";
          if (res.status === 200 && json.result !== undefined)
            outcome = { ok: true, startedAfterKill, servedBy };
          else if (res.status >= 502 && res.status <= 504)
            outcome = { ok: false, failure: `HTTP ${res.status}`, startedAfterKill };
          else throw new Error(`not a transport failure: ${res.status} ${res.text}`);
        } catch (err) {
          if ((err as Error).message.startsWith("not a transport failure")) throw err;
          outcome = { ok: false, failure: (err as Error).message, startedAfterKill };
        }
        outcomes.push(outcome);
        if (startedAfterKill) afterKill++;
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    await until("some load", async () => (outcomes.length >= 100 ? true : undefined));
    const exited = new Promise((r) => victim.process.once("exit", r));
    killedAt = Date.now();
    victim.process.kill("SIGKILL");
    await exited;
    await load;
    // The victim was serving its share until the kill.
    expect(outcomes.some((o) => !o.startedAfterKill && o.servedBy === "r1")).toBe(true);
    // At most the requests in flight (one per worker) fail; none sent after the kill does.
    expect(outcomes.filter((o) => !o.ok).length).toBeLessThanOrEqual(WORKERS);
    expect(outcomes.filter((o) => o.startedAfterKill && !o.ok)).toEqual([]);
    expect(outcomes.filter((o) => o.startedAfterKill).length).toBeGreaterThanOrEqual(200);
    await until("HAProxy to take the killed replica out", async () =>
      (await lb2.servers()).r1?.startsWith("DOWN") ? true : undefined,
    );
    await victim.stop();
    followers = [followers[0]!];
  }, 120_000);

  it("filter calls answer -32002 while Redis is down or stuck, and work again once it is back", async () => {
    const replica = followers[0]!;
    const filter = (await rpc(replica, "eth_newBlockFilter")) as string;
    const poll = () =>
      send(replica.url, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getFilterChanges",
        params: [filter],
      });
    const error = async () =>
      (
        (await poll()).json as {
          error?: { code: number; message: string };
        }
      ).error;

    // Stuck (SIGSTOP): answered once Redis does not answer in time, not left hanging.
    redis.pause();
    try {
      expect(await error()).toEqual({
        code: -32002,
        message: expect.stringMatching(/^shared state unavailable: Redis at .* is not answering/),
      });
      expect(await rpc(replica, "eth_blockNumber")).toMatch(/^0x/);
    } finally {
      redis.resume();
    }
    await until("polls to work again", async () =>
      (await error()) === undefined ? true : undefined,
    );

    // Down: refused at once, the node says so in its log, and other methods still answer.
    await redis.down();
    await until("the refusal", async () => ((await error())?.code === -32002 ? true : undefined));
    expect((await error())!.message).toMatch(
      /Redis at redis:\/\/127\.0\.0\.1:\d+\/? is not reachable/,
    );
    const install = await send(replica.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_newFilter",
      params: [{}],
    });
    expect((install.json as { error: { code: number } }).error.code).toBe(-32002);
    expect(await rpc(replica, "eth_blockNumber")).toMatch(/^0x/);
    await until("the log line", async () =>
      replica.logs().includes('"msg":"Redis unreachable') ? true : undefined,
    );

    // A replica started while Redis is down starts, and says so.
    const late = await startNode({ network: "--devnet", args: ["--redis", redis.url] });
    nodes.push(late);
    const lateInstall = () =>
      send(late.url, { jsonrpc: "2.0", id: 1, method: "eth_newBlockFilter", params: [] });
    expect(((await lateInstall()).json as { error: { code: number } }).error.code).toBe(-32002);
    expect(late.logs()).toContain('"msg":"Redis unreachable');

    // Back, with its data: the same filter is polled again.
    await redis.up();
    await until("the late replica to reach Redis", async () =>
      ((await lateInstall()).json as { result?: string }).result !== undefined ? true : undefined,
    );
    expect(late.logs()).toContain('"msg":"Connected to Redis"');
    await until("the filter to answer again", async () =>
      (await error()) === undefined ? true : undefined,
    );
    await sendTx({ to: contract });
    await synced([replica]);
    const changes = (await poll()).json as { result: string[] };
    expect(changes.result).toEqual([await headHash(producer)]);
    expect(replica.logs()).toContain('"msg":"Redis reachable again"');
  }, 90_000);
});
