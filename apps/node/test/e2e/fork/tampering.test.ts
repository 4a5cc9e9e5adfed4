import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hex, ok, startUpstreamChain, type UpstreamChain } from "../helpers/forkUpstream.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { type Rewrite, type RpcProxy, startProxy } from "../helpers/proxy.js";

// An upstream that lies is caught: each of its answers is checked against the fork block's state
// root (or the account's code hash) before anything of it is kept, so the read is refused, and
// answered right once the upstream is honest again.
let upstream: UpstreamChain;
let proxy: RpcProxy;
let fork: RunningNode;

beforeAll(async () => {
  upstream = await startUpstreamChain(3);
  proxy = await startProxy(upstream.node.url);
  fork = await startNode({
    args: ["--fork-url", proxy.url, "--fork-block", String(upstream.forkBlock)],
  });
}, 60_000);

afterAll(async () => {
  await fork?.stop();
  await proxy?.close();
  await upstream?.node.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: an answer's result is JSON of the method's shape
type Result = any;

/** Rewrites the result of each `method` answer the proxy forwards. */
function tamper(method: string, change: (result: Result, params: unknown[]) => Result): Rewrite {
  return (c, answer) =>
    c.method === method && answer.result !== undefined
      ? { ...answer, result: change(structuredClone(answer.result), c.params) }
      : answer;
}

const bump = (q: string) => hex(BigInt(q) + 1n);
/** A node's bytes with one byte changed (the first after its RLP list prefix). */
const flip = (node: string) =>
  `${node.slice(0, 6)}${((Number.parseInt(node.slice(6, 8), 16) + 1) & 0xff).toString(16).padStart(2, "0")}${node.slice(8)}`;

describe("a fork of an upstream that tampers with its answers", () => {
  const cases: {
    name: string;
    rewrite: () => Rewrite;
    redirect?: () => (c: { method: string; params: unknown[] }) => {
      method: string;
      params: unknown[];
    };
    read: () => [string, unknown[]];
    says: () => string[];
    right: () => Promise<unknown>;
  }[] = [
    {
      name: "a changed balance",
      rewrite: () => tamper("eth_getProof", (r) => ({ ...r, balance: bump(r.balance) })),
      read: () => ["eth_getBalance", [upstream.accounts[0], "latest"]],
      says: () => [`account ${upstream.accounts[0]}`, "the answer's balance 1001 (proven 1000)"],
      right: async () => hex(1000),
    },
    {
      name: "a changed storage value",
      rewrite: () =>
        tamper("eth_getProof", (r) => {
          for (const s of r.storageProof) s.value = bump(s.value);
          return r;
        }),
      read: () => ["eth_getStorageAt", [upstream.token, "0x3", "latest"]],
      says: () => [
        `account ${upstream.token.toLowerCase()}`,
        "slot 0x",
        `the answer's value ${1_000_001n} (proven ${1_000_000n})`,
      ],
      right: async () => `0x${1_000_000n.toString(16).padStart(64, "0")}`,
    },
    {
      name: "a proof node changed",
      rewrite: () =>
        tamper("eth_getProof", (r) => ({
          ...r,
          accountProof: r.accountProof.map((n: string, i: number) =>
            i === r.accountProof.length - 1 ? flip(n) : n,
          ),
        })),
      read: () => ["eth_getBalance", [upstream.accounts[1], "latest"]],
      says: () => [`account ${upstream.accounts[1]}`, "the account proof does not hold node"],
      right: async () => hex(1001),
    },
    {
      name: "a proof of another state root",
      rewrite: () => (_c, a) => a,
      redirect: () => (c) =>
        c.method === "eth_getProof" ? { ...c, params: [c.params[0], c.params[1], "0x0"] } : c,
      read: () => ["eth_getBalance", [upstream.accounts[2], "latest"]],
      says: () => [
        `account ${upstream.accounts[2]}`,
        "the account proof does not hold node",
        "the root: it is a proof of another state, not one from the state root 0x",
      ],
      right: async () => hex(1002),
    },
    {
      name: "wrong code",
      rewrite: () => tamper("eth_getCode", (code: string) => `${code}00`),
      read: () => ["eth_getCode", [upstream.token, "latest"]],
      says: () => [`code of ${upstream.token.toLowerCase()}`, "its hash is 0x", "the account's 0x"],
      right: () => ok(upstream.node.url, "eth_getCode", [upstream.token, hex(upstream.forkBlock)]),
    },
  ];

  for (const c of cases) {
    it(`refuses ${c.name}, keeps nothing of it, and reads right from an honest upstream`, async () => {
      const [method, params] = c.read();
      proxy.rewrite = c.rewrite();
      proxy.redirect = c.redirect?.();
      const seen = proxy.calls.length;
      const refused = await call(fork.url, method, params);
      proxy.rewrite = undefined;
      proxy.redirect = undefined;
      expect(proxy.calls.length).toBeGreaterThan(seen);
      expect(refused.error?.code).toBe(-32000);
      expect(refused.error?.message).toContain(
        `the fork's upstream ${proxy.url}/ gave an unverified answer`,
      );
      for (const part of c.says()) expect(refused.error?.message).toContain(part);
      expect(await ok(fork.url, method, params)).toBe(await c.right());
    });
  }
});
