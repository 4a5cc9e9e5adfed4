import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { type RunningNode, runCli, send, startNode } from "../helpers/node.js";
import { p2pAddress, rpc, until } from "../helpers/p2p.js";

// Node processes on a development network, each on its own loopback address so that bans by
// address can be told apart: one mines, the others follow with --no-automine; transactions
// sent anywhere reach the one that mines; a late node syncs 2,000 blocks; a partition made by
// bans heals onto the heavier side, whose reorganization gives the lighter side's logs back as
// removed; a node of another network is refused at the handshake.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PING = keccak256(toUtf8Bytes("Ping()"));
/** Runtime: mstore(0, 7); log1(0, 32, Ping()); stop. */
const RUNTIME = `0x60076000527f${PING.slice(2)}60206000a100`;

const nodes: RunningNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
});

async function start(host: string, args: string[] = [], network = "--devnet") {
  const node = await startNode({
    network,
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

const head = async (node: RunningNode) =>
  (await rpc(node, "eth_getBlockByNumber", ["latest", false])) as {
    number: string;
    hash: string;
    stateRoot: string;
  };

async function sameHead(a: RunningNode, b: RunningNode, what: string) {
  return until(what, async () => {
    const [x, y] = await Promise.all([head(a), head(b)]);
    return x.hash === y.hash ? x : undefined;
  });
}

let nonce = 0;
const wallet = new Wallet(KEY0);
async function signed(fields: { to?: string | null; data?: string; value?: bigint }) {
  return wallet.signTransaction({
    to: fields.to ?? null,
    data: fields.data ?? "0x",
    value: fields.value ?? 0n,
    nonce: nonce++,
    gasLimit: 200_000n,
    gasPrice: 100_000_000n,
    chainId: 32n,
    type: 0,
  });
}

/** Mines `count` empty blocks on `node` with batches of evm_mine. */
async function mine(node: RunningNode, count: number) {
  for (let done = 0; done < count; done += 100) {
    const batch = Array.from({ length: Math.min(100, count - done) }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "evm_mine",
    }));
    const res = await send(node.url, batch);
    expect(res.status).toBe(200);
  }
}

describe("a development network of node processes", () => {
  let a: RunningNode;
  let b: RunningNode;
  let c: RunningNode;

  it("A mines; B and C follow it; a transaction sent to C is mined by A and seen by all", async () => {
    a = await start("127.0.0.2");
    b = await start("127.0.0.3", ["--no-automine", "--bootnodes", p2pAddress(a)]);
    c = await start("127.0.0.4", ["--no-automine", "--bootnodes", p2pAddress(a)]);
    await until("B and C connected to A", async () =>
      (await rpc(a, "net_peerCount")) === "0x2" ? true : undefined,
    );
    const peers = (await rpc(a, "net_peerList")) as string[];
    expect(peers.map((p) => p.split(" | ")[1]!.split(":")[0]).sort()).toEqual([
      "127.0.0.3",
      "127.0.0.4",
    ]);
    expect(peers[0]).toMatch(/^[0-9a-f]{8} \| 127\.0\.0\.\d:\d+$/);
    expect(await rpc(b, "net_listening")).toBe(true);

    const hash = (await rpc(c, "eth_sendRawTransaction", [
      await signed({ to: "0x00000000000000000000000000000000000000aa", value: 5n }),
    ])) as string;
    const receipts = await Promise.all(
      [a, b, c].map((n) =>
        until(`the receipt on ${n.url}`, async () => {
          const r = await rpc(n, "eth_getTransactionReceipt", [hash]);
          return r === null ? undefined : (r as { blockHash: string; status: string });
        }),
      ),
    );
    expect(new Set(receipts.map((r) => r.blockHash)).size).toBe(1);
    expect(receipts[0]!.status).toBe("0x1");
    // B and C made no block of their own: the block is A's.
    expect(await rpc(b, "eth_mining")).toBe(false);
  }, 60_000);

  it("a node started after A has 2,000 blocks syncs to the same head and state root", async () => {
    await mine(a, 2_000);
    const target = await head(a);
    expect(Number(target.number)).toBeGreaterThanOrEqual(2_000);
    const d = await start("127.0.0.5", ["--no-automine", "--bootnodes", p2pAddress(a)]);
    let sawProgress:
      | { startingBlock: string; currentBlock: string; highestBlock: string }
      | undefined;
    const synced = await until(
      "D to sync",
      async () => {
        const syncing = await rpc(d, "eth_syncing");
        if (syncing !== false) sawProgress ??= syncing as typeof sawProgress;
        const h = await head(d);
        return h.hash === target.hash && syncing === false ? h : undefined;
      },
      90_000,
    );
    expect(synced.stateRoot).toBe(target.stateRoot);
    expect(sawProgress).toBeDefined();
    expect(Number(sawProgress!.highestBlock)).toBeGreaterThan(Number(sawProgress!.startingBlock));
    expect(d.logs()).toContain('"msg":"Synced"');
  }, 120_000);

  it("a sync killed with SIGKILL resumes after a restart from the last block it wrote", async () => {
    const target = await head(a);
    const datadir = mkdtempSync(join(tmpdir(), "nodex-p2p-resume-"));
    const args = [
      "--p2p-host",
      "127.0.0.7",
      "--p2p-port",
      "0",
      "--no-automine",
      "--bootnodes",
      p2pAddress(a),
    ];
    try {
      const first = await startNode({ network: "--devnet", datadir, args });
      await until("a few hundred blocks", async () => {
        const syncing = (await rpc(first, "eth_syncing")) as false | { currentBlock: string };
        return syncing !== false && Number(syncing.currentBlock) >= 300 ? true : undefined;
      });
      first.process.kill("SIGKILL");
      await first.stop();
      const second = await startNode({ network: "--devnet", datadir, args });
      nodes.push(second);
      const line = await until("the restarted sync", async () =>
        second
          .logs()
          .split("\n")
          .find((l) => l.includes('"msg":"Syncing"')),
      );
      // It starts after what the killed process wrote, not from genesis.
      expect(Number((JSON.parse(line) as { from: string }).from)).toBeGreaterThan(300);
      const synced = await until(
        "the restarted node to sync",
        async () => {
          const h = await head(second);
          return h.hash === target.hash ? h : undefined;
        },
        90_000,
      );
      expect(synced.stateRoot).toBe(target.stateRoot);
    } finally {
      rmSync(datadir, { recursive: true, force: true });
    }
  }, 150_000);

  it("a partition made by bans heals onto the heavier side; the lighter side's logs come back removed", async () => {
    // B and C become miners on their own sides: B with A, C alone.
    const contractTx = (await rpc(a, "eth_sendRawTransaction", [
      await signed({ data: deployCode(RUNTIME) }),
    ])) as string;
    const { contractAddress } = (await until("the contract", async () => {
      const r = await rpc(c, "eth_getTransactionReceipt", [contractTx]);
      return r === null ? undefined : r;
    })) as { contractAddress: string };
    await sameHead(a, c, "C to follow A");
    // Cut C off: it bans A and B, they ban C.
    for (const [node, others] of [
      [c, ["127.0.0.2", "127.0.0.3", "127.0.0.5"]],
      [a, ["127.0.0.4"]],
      [b, ["127.0.0.4"]],
    ] as const)
      for (const address of others) await rpc(node, "sco_banAddress", [address]);
    await until("C alone", async () =>
      (await rpc(c, "net_peerCount")) === "0x0" ? true : undefined,
    );
    expect(await rpc(c, "sco_bannedAddresses")).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.5"]);
    const filter = await rpc(c, "eth_newFilter", [{ address: contractAddress }]);
    // The light side: C mines one block with a log.
    const ping = await signed({ to: contractAddress });
    await rpc(c, "eth_sendRawTransaction", [ping]);
    await rpc(c, "evm_mine");
    const light = (await rpc(c, "eth_getFilterChanges", [filter])) as {
      removed: boolean;
      transactionHash: string;
    }[];
    expect(light.map((l) => l.removed)).toEqual([false]);
    // The heavy side: A mines five blocks.
    await mine(a, 5);
    // Heal: the bans go, the bootnodes are dialled again, C syncs onto A's chain.
    for (const [node, others] of [
      [c, ["127.0.0.2", "127.0.0.3", "127.0.0.5"]],
      [a, ["127.0.0.4"]],
      [b, ["127.0.0.4"]],
    ] as const)
      for (const address of others) await rpc(node, "sco_unbanAddress", [address]);
    const healed = await sameHead(a, c, "C to reorganize onto A's chain");
    expect(healed.hash).toBe((await head(a)).hash);
    const changes = (await rpc(c, "eth_getFilterChanges", [filter])) as {
      removed: boolean;
      transactionHash: string;
    }[];
    expect(changes.filter((l) => l.removed).map((l) => l.transactionHash)).toEqual([
      light[0]!.transactionHash,
    ]);
  }, 120_000);

  it("says so and stops when its peer-to-peer port is taken", async () => {
    const taken = /\/tcp\/(\d+)\//.exec(p2pAddress(a))![1]!;
    const datadir = mkdtempSync(join(tmpdir(), "nodex-p2p-port-"));
    try {
      const run = await runCli([
        "--devnet",
        "--datadir",
        datadir,
        "--rpc-port",
        "0",
        "--log-format",
        "json",
        "--p2p-host",
        "127.0.0.2",
        "--p2p-port",
        taken,
      ]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `the peer-to-peer listener cannot listen on 127.0.0.2:${taken}: address already in use`,
      );
    } finally {
      rmSync(datadir, { recursive: true, force: true });
    }
  }, 30_000);

  it("refuses a node of another network at the handshake, saying why", async () => {
    const other = await start(
      "127.0.0.6",
      ["--p2p", "on", "--bootnodes", p2pAddress(a)],
      "--regtest",
    );
    await until("the refusal in the log", async () =>
      other.logs().includes("Disconnecting peer") ? true : undefined,
    );
    const refusal = other
      .logs()
      .split("\n")
      .filter((l) => l.includes("Disconnecting peer"))
      .join("\n");
    // identify tells the other side's network id; when it cannot, the protocol it lacks.
    expect(refusal).toMatch(/network id 32, ours is 33|does not speak \/nodex\/33\/status\/1/);
    expect(await rpc(other, "net_peerCount")).toBe("0x0");
  }, 30_000);
});
