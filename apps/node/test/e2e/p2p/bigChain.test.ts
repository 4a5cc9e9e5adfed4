import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BigChain,
  buildBigChain,
  filledAccount,
  filledSlot,
  LARGE_CHAIN,
  type SampleSlot,
} from "../helpers/bigChain.js";
import { type BigChainCopy, bigChainCacheDir, bigChainDatadir } from "../helpers/bigChainCache.js";
import { type RunningNode, startNode } from "../helpers/node.js";
import { p2pAddress, rpc } from "../helpers/p2p.js";
import { type AccountProof, verifyAccount, verifyStorage } from "../proofs/verify.js";

// The chain a snapshot sync starts from: a producer on the peer-to-peer network (its own
// loopback address) with 5,000 blocks and a large state at the head, made by buildBigChain (once,
// through the cache of bigChainDatadir: the producer runs on a copy of the datadir) and read back
// here as a syncing node's user would: the head, balances, slots, and proofs of them against the
// head's state root.

const OPTIONS = LARGE_CHAIN;

const nodes: RunningNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
});

async function producer(host: string, datadir?: string): Promise<RunningNode> {
  const node = await startNode({
    network: "--devnet",
    args: ["--p2p-host", host, "--p2p-port", "0", "--no-automine"],
    ...(datadir === undefined ? {} : { datadir }),
  });
  nodes.push(node);
  return node;
}

/** Bytes of the files under `dir`. */
function sizeOf(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    bytes += entry.isDirectory() ? sizeOf(path) : statSync(path).size;
  }
  return bytes;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

describe("a devnet chain of 5,000 blocks with 50,000 accounts and 10,000 slots", () => {
  let node: RunningNode;
  let copy: BigChainCopy;
  let chain: BigChain;
  let head: { number: string; hash: string; stateRoot: string };

  beforeAll(async () => {
    copy = await bigChainDatadir(OPTIONS);
    chain = copy.chain;
    node = await producer("127.0.0.2", copy.datadir);
    head = (await rpc(node, "eth_getBlockByNumber", ["latest", false])) as typeof head;
    const f = (p: { [k: string]: number } | undefined) =>
      p === undefined
        ? "n/a"
        : Object.entries(p)
            .map(([k, v]) => `${k} ${v.toFixed(1)}`)
            .join(", ");
    process.stdout.write(
      `big chain (${copy.built ? "built now" : "from the cache"}): ${chain.head} blocks, ${chain.accountsCreated} accounts, ${chain.slotsWritten} slots; ` +
        `seconds: ${f({ ...chain.seconds })}; node CPU seconds: ${f(chain.cpuSeconds && { ...chain.cpuSeconds })}; ` +
        `datadir ${(sizeOf(node.datadir) / 2 ** 20).toFixed(1)} MiB\n`,
    );
  }, 300_000);
  afterAll(async () => {
    await node?.stop();
    copy?.remove();
  });

  it("ends at block 5,000, the head the build reports, with its state blocks before 150 empty ones", async () => {
    expect(chain.head).toBe(5_000n);
    expect(await rpc(node, "eth_blockNumber")).toBe("0x1388");
    expect(head).toMatchObject({
      number: "0x1388",
      hash: chain.headHash,
      stateRoot: chain.stateRoot,
    });
    expect(chain.accountsCreated).toBe(50_000);
    expect(chain.slotsWritten).toBe(10_000);
    // Block 1 on is empty up to the state blocks; those each hold transactions.
    const count = (n: bigint) => rpc(node, "eth_getBlockTransactionCountByNumber", [hex(n)]);
    expect(chain.firstStateBlock).toBeGreaterThan(4_800n);
    expect(await count(1n)).toBe("0x0");
    expect(await count(chain.firstStateBlock - 1n)).toBe("0x0");
    const lastStateBlock = chain.head - 150n;
    for (let n = chain.firstStateBlock; n <= lastStateBlock; n++)
      expect(BigInt((await count(n)) as string)).toBeGreaterThan(0n);
    expect(await count(lastStateBlock + 1n)).toBe("0x0");
    expect(await count(chain.head)).toBe("0x0");
    // The producer is on the network, for a node to sync from, with its own identity.
    expect(p2pAddress(node)).toMatch(/^\/ip4\/127\.0\.0\.2\/tcp\/\d+\/p2p\//);
  });

  it("pays every account and no more: the first, the last, samples between, and the next is absent", async () => {
    expect(chain.sampleAccounts.length).toBeGreaterThanOrEqual(5);
    expect(chain.sampleAccounts[0]).toEqual(filledAccount(0));
    expect(chain.sampleAccounts.at(-1)).toEqual(filledAccount(49_999));
    for (const a of chain.sampleAccounts) {
      expect(BigInt((await rpc(node, "eth_getBalance", [a.address, "latest"])) as string)).toBe(
        a.balance,
      );
      expect(a.balance).toBeGreaterThan(0n);
    }
    const next = filledAccount(50_000);
    expect(await rpc(node, "eth_getBalance", [next.address, "latest"])).toBe("0x0");
    // An account made by the build differs from the development accounts and its neighbours.
    expect(new Set(chain.sampleAccounts.map((a) => a.address)).size).toBe(
      chain.sampleAccounts.length,
    );
  });

  it("writes each contract's slots: samples read back, the next slot is empty", async () => {
    expect(chain.contracts).toHaveLength(2);
    for (const c of chain.contracts) {
      const samples = chain.sampleSlots.filter((s) => s.address === c);
      expect(samples.length).toBeGreaterThanOrEqual(5);
      expect(samples).toContainEqual(filledSlot(c, 4_999));
      expect((await rpc(node, "eth_getCode", [c, "latest"])) as string).not.toBe("0x");
      const next = filledSlot(c, 5_000);
      expect(
        BigInt((await rpc(node, "eth_getStorageAt", [c, next.slot, "latest"])) as string),
      ).toBe(0n);
    }
    for (const s of chain.sampleSlots) {
      const value = (await rpc(node, "eth_getStorageAt", [s.address, s.slot, "latest"])) as string;
      expect(BigInt(value)).toBe(s.value);
    }
    // The two contracts' slots differ (no storage trie shared between them).
    const [a, b] = chain.contracts as [string, string];
    expect(filledSlot(a, 7).slot).not.toBe(filledSlot(b, 7).slot);
  });

  it("gives each user a copy of its own of the same chain", async () => {
    const again = await bigChainDatadir(OPTIONS);
    try {
      expect(again.built).toBe(false);
      expect(again.datadir).not.toBe(copy.datadir);
      expect(again.chain).toEqual(chain);
      expect(readdirSync(again.datadir)).not.toContain("nodekey");
    } finally {
      again.remove();
    }
    expect(readdirSync(copy.datadir)).toContain("nodekey");
  });

  it("proves an account and slots against the head's state root (eth_getProof)", async () => {
    const account = chain.sampleAccounts[3]!;
    const answer = (await rpc(node, "eth_getProof", [
      account.address,
      [],
      head.hash,
    ])) as AccountProof;
    expect(await verifyAccount(answer, head.stateRoot)).toBe(true);
    expect(BigInt(answer.balance)).toBe(account.balance);
    // A state of 50,000 accounts is a trie at least 4 levels deep.
    expect(answer.accountProof.length).toBeGreaterThanOrEqual(4);

    const contract = chain.contracts[1]!;
    const slots: SampleSlot[] = chain.sampleSlots.filter((s) => s.address === contract);
    const proof = (await rpc(node, "eth_getProof", [
      contract,
      slots.map((s) => s.slot),
      head.hash,
    ])) as AccountProof;
    expect(await verifyAccount(proof, head.stateRoot)).toBe(true);
    for (const [i, entry] of proof.storageProof.entries())
      expect(await verifyStorage(proof.storageHash, entry)).toBe(slots[i]!.value);
  });
});

describe("buildBigChain and its cache", () => {
  const small = { blocks: 20, accounts: 1_200, slots: 1_500, contracts: 2 };
  let a: RunningNode;
  let x: BigChain;
  let copies: BigChainCopy[] = [];

  // One build on a producer, and at the same time two users of a cold cache (this file's own
  // entry, removed first), whose node builds the same options a second time.
  beforeAll(async () => {
    rmSync(bigChainCacheDir(small), { recursive: true, force: true });
    [[a, x], copies] = await Promise.all([
      producer("127.0.0.3").then(async (node) => [node, await buildBigChain(node, small)] as const),
      Promise.all([bigChainDatadir(small), bigChainDatadir(small)]),
    ]);
  }, 120_000);
  afterAll(() => {
    for (const c of copies) c.remove();
  });

  it("makes the same chain twice: same head hash and state root", () => {
    const y = copies[0]!.chain;
    expect(x.head).toBe(20n);
    expect(y.headHash).toBe(x.headHash);
    expect(y.stateRoot).toBe(x.stateRoot);
    expect(y.sampleAccounts).toEqual(x.sampleAccounts);
    expect(y.sampleSlots).toEqual(x.sampleSlots);
    // The deploy, a block of accounts (2 transactions), a block of slots (4): blocks 18 to 20.
    expect(x.firstStateBlock).toBe(18n);
  });

  it("builds into the cache once for users that ask at once, each with a copy that serves the chain", async () => {
    expect(copies.map((c) => c.built).sort()).toEqual([false, true]);
    expect(copies[1]!.chain).toEqual(copies[0]!.chain);
    expect(copies[0]!.datadir).not.toBe(copies[1]!.datadir);
    const node = await producer("127.0.0.4", copies[1]!.datadir);
    const head = (await rpc(node, "eth_getBlockByNumber", ["latest", false])) as {
      hash: string;
      stateRoot: string;
    };
    expect(head).toMatchObject({ hash: x.headHash, stateRoot: x.stateRoot });
    const sample = x.sampleAccounts[1]!;
    expect(BigInt((await rpc(node, "eth_getBalance", [sample.address, "latest"])) as string)).toBe(
      sample.balance,
    );
    await node.stop();
  });

  it("refuses options it cannot meet and a node past genesis, saying why", async () => {
    await expect(buildBigChain(a, { blocks: 0, accounts: 1, slots: 1 })).rejects.toThrow(
      "blocks must be an integer of at least 1, not 0",
    );
    await expect(buildBigChain(a, { blocks: 2, accounts: 10_000, slots: 1 })).rejects.toThrow(
      "the state takes 3 blocks and 0 follow it, more than the 2 wanted",
    );
    await expect(
      buildBigChain(a, { blocks: 5, accounts: 1, slots: 1, emptyAfter: 3 }),
    ).rejects.toThrow("the state takes 3 blocks and 3 follow it, more than the 5 wanted");
    await expect(buildBigChain(a.url, small)).rejects.toThrow(
      "the node's head is block 20, not genesis",
    );
  });
});
