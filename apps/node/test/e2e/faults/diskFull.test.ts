import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, bytesToHex, hexToBytes, signTransaction } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";

// The node's datadir on a small tmpfs that transfers with 60 kB of calldata fill up. What a
// client was told stays true: a hash answered is mined, now or after the disk has room again,
// across a restart or a kill; once writes fail, transactions are refused with an error naming
// the disk, reads are served, /health says why and /ready answers 503; the node takes writes
// again by itself once there is room.

const KEY = hexToBytes("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const TO = "0x000000000000000000000000000000000000abcd";
/** 60 kB of calldata that LevelDB's compression cannot shrink: a xorshift stream per nonce. */
function calldata(nonce: number): Uint8Array {
  const out = new Uint8Array(60_000);
  let x = (nonce + 1) * 2654435761;
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x & 0xff) | 1;
  }
  return out;
}

const sign = async (nonce: number) =>
  bytesToHex(
    signTransaction(
      {
        nonce: BigInt(nonce),
        gasPrice: 0n,
        gasLimit: 1_000_000n,
        to: hexToBytes(TO) as Address,
        value: 1n,
        data: calldata(nonce),
      },
      KEY,
      33,
    ).raw,
  );

/** Mounting needs root (CI runs as root); elsewhere these tests cannot run. */
const canMount = process.getuid?.() === 0 && tryMount();

function tryMount(): boolean {
  const dir = mkdtempSync(join(tmpdir(), "nodex-mount-probe-"));
  const ok = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]).status === 0;
  if (ok) spawnSync("umount", [dir]);
  rmSync(dir, { recursive: true, force: true });
  return ok;
}

const mounts: string[] = [];
const nodes: RunningNode[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
  for (const dir of mounts.splice(0)) {
    spawnSync("umount", ["-l", dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

function mountTmpfs(mib: number): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-small-disk-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir]);
  if (r.status !== 0) throw new Error(`mount failed: ${r.stderr}`);
  mounts.push(dir);
  mkdirSync(join(dir, "data"));
  return join(dir, "data");
}

function resize(datadir: string, mib: number): void {
  const r = spawnSync("mount", ["-o", `remount,size=${mib}m`, join(datadir, "..")]);
  if (r.status !== 0) throw new Error(`remount failed: ${r.stderr}`);
}

async function start(datadir: string, args: readonly string[] = []): Promise<RunningNode> {
  const node = await startNode({ datadir, args: ["--min-free-space", "0", ...args] });
  nodes.push(node);
  return node;
}

interface Outcome {
  readonly acked: string[];
  readonly refusal: { code: number; message: string };
}

/** Sends transfers until one is refused; every hash answered is in `acked`. */
async function fill(node: RunningNode, from = 0): Promise<Outcome> {
  const acked: string[] = [];
  for (let nonce = from; nonce < from + 2_000; nonce++) {
    const res = await call(node.url, "eth_sendRawTransaction", [await sign(nonce)]);
    if (res.error !== undefined) return { acked, refusal: res.error };
    acked.push(res.result as string);
  }
  throw new Error("the disk never filled");
}

async function receipt(node: RunningNode, hash: string) {
  const res = await call(node.url, "eth_getTransactionReceipt", [hash]);
  expect(res.error).toBeUndefined();
  return res.result as { blockNumber: string; blockHash: string; status: string } | null;
}

/** Every receipt served names a block the chain has, by number and hash. */
async function receiptsAreDurable(node: RunningNode, hashes: readonly string[]) {
  const found = new Map<string, string>();
  for (const hash of hashes) {
    const r = await receipt(node, hash);
    if (r === null) continue;
    const block = await call(node.url, "eth_getBlockByNumber", [r.blockNumber, false]);
    expect((block.result as { hash: string } | null)?.hash).toBe(r.blockHash);
    found.set(hash, r.blockHash);
  }
  return found;
}

/** Polls `check` up to `tries` times, a tenth of a second apart. */
async function eventually<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined>,
  tries = 300,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${typeof what === "string" ? what : what()}: not after ${tries} tries`);
}

async function allMined(node: RunningNode, hashes: readonly string[]) {
  let missing: string[] = [];
  return eventually(
    () => `mined: ${missing.length} of ${hashes.length} without a receipt (${missing[0]})`,
    async () => {
      const found = await receiptsAreDurable(node, hashes);
      missing = hashes.filter((h) => !found.has(h));
      return missing.length === 0 ? found : undefined;
    },
    100,
  );
}

// Each test fills a disk through the whole node: bounded by the disk's size, not by time.
describe.skipIf(!canMount)("a full disk", { timeout: 240_000 }, () => {
  it("refuses transactions naming the disk, keeps every hash it answered, and recovers by itself", async () => {
    const datadir = mountTmpfs(16);
    const node = await start(datadir);
    const { acked, refusal } = await fill(node);
    expect(acked.length).toBeGreaterThan(10);
    expect(refusal.code).toBe(-32002);
    expect(refusal.message).toMatch(/no space left on (the )?device/i);
    // Refused from now on, with the same reason, not as a fault of the transaction.
    const again = await call(node.url, "eth_sendRawTransaction", [await sign(acked.length)]);
    expect(again.error?.code).toBe(-32002);
    expect(again.error?.message).toMatch(/^the node's storage takes no writes: no space left/);
    // Reads are served; health says why; readiness is refused.
    expect((await call(node.url, "eth_blockNumber")).error).toBeUndefined();
    expect((await call(node.url, "eth_getBalance", [TO, "latest"])).error).toBeUndefined();
    const health = await send(node.url, undefined, { method: "GET", path: "/health" });
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({
      status: "degraded",
      storage: { writable: false, reason: expect.stringMatching(/no space left/i) },
    });
    const ready = await send(node.url, undefined, { method: "GET", path: "/ready" });
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ status: "degraded" });
    expect(node.logs()).toContain("Storage takes no writes");
    // Every receipt served is of a block that is there.
    const before = await receiptsAreDurable(node, acked);
    // Room again: the node takes writes by itself and mines what waited.
    resize(datadir, 96);
    await eventually("ready", async () => {
      const res = await send(node.url, undefined, { method: "GET", path: "/ready" });
      return res.status === 200 ? true : undefined;
    });
    const mined = await allMined(node, acked);
    for (const [hash, block] of before) expect(mined.get(hash)).toBe(block);
    const next = await call(node.url, "eth_sendRawTransaction", [await sign(acked.length)]);
    expect(next.error).toBeUndefined();
    await allMined(node, [next.result as string]);
    // A clean restart has all of it.
    await node.stop();
    const restarted = await start(datadir);
    const after = await allMined(restarted, [...acked, next.result as string]);
    for (const [hash, block] of mined) expect(after.get(hash)).toBe(block);
  });

  it("keeps every hash it answered across a kill while the disk is full", async () => {
    const datadir = mountTmpfs(16);
    const node = await start(datadir);
    const { acked, refusal } = await fill(node);
    expect(refusal.code).toBe(-32002);
    const before = await receiptsAreDurable(node, acked);
    node.process.kill("SIGKILL");
    await node.stop();
    resize(datadir, 96);
    // What was answered is in the chain, or in the journal and mined at start.
    const restarted = await start(datadir);
    const after = await allMined(restarted, acked);
    for (const [hash, block] of before) expect(after.get(hash)).toBe(block);
  });

  it("warns, then refuses before the disk is full (--min-free-space), and takes writes once there is room", async () => {
    const datadir = mountTmpfs(48);
    const node = await start(datadir, ["--min-free-space", "30"]);
    expect(node.logs()).toContain("Free disk space is low");
    const ok = await call(node.url, "eth_sendRawTransaction", [await sign(0)]);
    expect(ok.error).toBeUndefined();
    // Another program takes the room.
    const filler = join(datadir, "..", "filler");
    writeFileSync(filler, Buffer.alloc(24 * 2 ** 20, 1));
    // Sent until the node sees the room gone: those taken before are kept like any other.
    const sent = [ok.result as string];
    let nonce = 1;
    const refused = await eventually("refused", async () => {
      const res = await call(node.url, "eth_sendRawTransaction", [await sign(nonce)]);
      if (res.error !== undefined) return res.error;
      sent.push(res.result as string);
      nonce++;
      return undefined;
    });
    expect(refused.code).toBe(-32002);
    expect(refused.message).toMatch(
      /^the node's storage takes no writes: free space .* MiB is below the minimum of 30\.0 MiB \(--min-free-space\)/,
    );
    expect((await send(node.url, undefined, { method: "GET", path: "/ready" })).status).toBe(503);
    rmSync(filler);
    const taken = await eventually("taken", async () => {
      const res = await call(node.url, "eth_sendRawTransaction", [await sign(nonce)]);
      return res.error === undefined ? (res.result as string) : undefined;
    });
    await allMined(node, [...sent, taken]);
  });
});
