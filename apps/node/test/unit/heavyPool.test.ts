import type { Chain, HeadChange, StoredBlock } from "@nodex/chain";
import { TraceAbort } from "@nodex/evm";
import { HeavyErrorCode, type HeavyRequest, HeavyRequestError, toRPCError } from "@nodex/rpc";
import type { Database } from "@nodex/state";
import { type Logger, NodexError, nullLogger } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { HeavyRequestPool } from "../../src/heavyPool.js";
import type { HeavyWorkerData } from "../../src/heavyWorker.js";

// The pool of worker threads with a stand-in worker (fixtures/fakeHeavyWorker.mjs): requests
// go one at a time to each thread, failures come back as errors, a thread that dies fails its
// request and is replaced, a request past its deadline never reaches a thread.

const WORKER = new URL("./fixtures/fakeHeavyWorker.mjs", import.meta.url);
const DATA = {} as HeavyWorkerData;

interface Logged {
  readonly msg: string;
  readonly meta: Record<string, unknown> | undefined;
}

function setup(threads = 1, maxQueued = 64) {
  const errors: Logged[] = [];
  const logger: Logger = {
    ...nullLogger,
    error: (msg: string, meta?: Record<string, unknown>) => {
      errors.push({ msg, meta });
    },
  };
  let listener: ((change: HeadChange) => void) | undefined;
  const block = (n: number, byte: number) =>
    ({
      hash: new Uint8Array(32).fill(byte),
      block: { header: { number: BigInt(n) } },
    }) as unknown as StoredBlock;
  const chain = {
    head: block(7, 0xab),
    onHeadChange(l: (change: HeadChange) => void) {
      listener = l;
      return () => {
        listener = undefined;
      };
    },
  };
  let landedCalls = 0;
  const db = {
    landed: async () => {
      landedCalls++;
    },
  };
  const pool = new HeavyRequestPool({ threads, maxQueued }, DATA, {
    db: db as unknown as Database,
    chain: chain as unknown as Chain,
    logger,
    workerUrl: WORKER,
  });
  pools.push(pool);
  return {
    pool,
    errors,
    block,
    chain,
    landedCalls: () => landedCalls,
    reorg: (removed: StoredBlock[], added: StoredBlock[]) =>
      listener?.({ head: added.at(-1)!, removed, added } as unknown as HeadChange),
  };
}

const request = (method: string, extra: Record<string, unknown> = {}) =>
  ({ method, ...extra }) as unknown as HeavyRequest;

const pools: HeavyRequestPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.stop()));
});

describe("HeavyRequestPool", () => {
  it("serves a request on a thread, on the head the chain has, once its writes landed", async () => {
    const { pool, landedCalls } = setup();
    const text = await pool.run(request("echo", { value: 42 }));
    expect(JSON.parse(text)).toEqual({ head: "ab".repeat(32), changed: [], value: 42 });
    expect(landedCalls()).toBe(1);
  });

  it("serves more requests than threads, each answered with its own result", async () => {
    const { pool } = setup(2);
    const texts = await Promise.all(
      Array.from({ length: 7 }, (_, i) => pool.run(request("echo", { value: i }))),
    );
    expect(texts.map((t) => (JSON.parse(t) as { value: number }).value)).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
  });

  it("tells each thread which canonical numbers a reorganization changed, once", async () => {
    const { pool, reorg, block } = setup();
    // The first request starts the thread; one started after a reorganization has no stale
    // cache to be told of.
    await pool.run(request("echo"));
    reorg([block(5, 1), block(6, 2)], [block(5, 3), block(6, 4), block(7, 5)]);
    const first = JSON.parse(await pool.run(request("echo"))) as { changed: string[] };
    expect(first.changed).toEqual(["5", "6", "7"]);
    const second = JSON.parse(await pool.run(request("echo"))) as { changed: string[] };
    expect(second.changed).toEqual([]);
  });

  it("throws a domain failure as a domain error with its code", async () => {
    const { pool } = setup();
    const err = await pool.run(request("fail")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NodexError);
    expect((err as NodexError).code).toBe("CHAIN_UNKNOWN_BLOCK");
    expect((err as Error).message).toBe("block #9 not found");
  });

  it("fails the request of a thread that throws, logs it and replaces the thread", async () => {
    const { pool, errors } = setup();
    const err = await pool.run(request("throw")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(NodexError);
    expect((err as Error).message).toMatch(/worker thread serving throw failed: boom/);
    expect(errors[0]?.msg).toBe("A worker thread for heavy requests stopped");
    expect(errors[0]?.meta).toMatchObject({ method: "throw", replaced: true });
    expect(pool.threads).toBe(1);
    expect(JSON.parse(await pool.run(request("echo", { value: 1 })))).toMatchObject({ value: 1 });
  });

  it("fails the request of a thread that exits, and serves the next on a new thread", async () => {
    const { pool } = setup();
    const err = await pool.run(request("exit")).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/exited with code 3/);
    expect(await pool.run(request("slow", { ms: 1 }))).toBe("1");
  });

  it("drops a request still queued at its deadline with the tracers' error", async () => {
    const { pool } = setup();
    const slow = pool.run(request("slow", { ms: 200 }));
    const late = pool.run(request("echo", { budget: { deadline: 1 } }));
    await expect(late).rejects.toBeInstanceOf(TraceAbort);
    expect(await slow).toBe("1");
  });

  it("fails what waits when stopped, and takes nothing after", async () => {
    const { pool } = setup();
    const running = pool.run(request("slow", { ms: 10_000 })).catch((e: unknown) => e);
    const queued = pool.run(request("echo")).catch((e: unknown) => e);
    await pool.stop();
    expect(await running).toEqual(new Error("the node is stopping"));
    expect(await queued).toEqual(new Error("the node is stopping"));
    await expect(pool.run(request("echo"))).rejects.toThrow("the node is stopping");
  });

  it("pauses: ends its threads, fails what they served, holds new requests until resumed", async () => {
    const { pool } = setup(2);
    const running = pool.run(request("slow", { ms: 10_000 })).catch((e: unknown) => e);
    // Both threads ready and one serving before the pause.
    expect(await pool.run(request("echo", { value: 0 }))).toContain('"value":0');
    await pool.pause();
    expect(pool.threads).toBe(0);
    expect(await running).toEqual(new Error("the node's storage is being reopened"));
    let answered = false;
    const held = pool.run(request("echo", { value: 1 })).then((text) => {
      answered = true;
      return text;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(answered).toBe(false);
    pool.resume();
    expect(pool.threads).toBe(2);
    expect(JSON.parse(await held)).toMatchObject({ value: 1 });
  });

  it("refuses a request past the queue's bound with a domain error (-32011)", async () => {
    const { pool } = setup(1, 2);
    // The thread is not ready yet: both wait in the queue, which is then full.
    const waiting = [pool.run(request("slow", { ms: 1 })), pool.run(request("echo", { value: 1 }))];
    const err = await pool.run(request("echo")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeavyRequestError);
    expect((err as HeavyRequestError).code).toBe(HeavyErrorCode.QUEUE_FULL);
    expect(toRPCError(err).code).toBe(-32011);
    expect(await Promise.all(waiting)).toEqual(["1", expect.stringContaining('"value":1')]);
    // Room again once they are served.
    expect(await pool.run(request("slow", { ms: 1 }))).toBe("1");
  });

  it("starts its threads with the first request, not before", async () => {
    const { pool } = setup(2);
    expect(pool.threads).toBe(0);
    expect(JSON.parse(await pool.run(request("echo", { value: 2 })))).toMatchObject({ value: 2 });
    expect(pool.threads).toBe(2);
  });

  it("refuses a pool without threads", () => {
    expect(() => setup(0)).toThrow(RangeError);
  });
});
