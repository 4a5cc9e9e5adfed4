import { afterEach, describe, expect, it } from "vitest";
import {
  redactUrl,
  StateError,
  StateErrorCode,
  Upstream,
  type UpstreamOptions,
} from "../../../src/index.js";
import {
  address,
  answerOf,
  closedPortUrl,
  healthy,
  type Reply,
  type ScriptedServer,
  scriptedServer,
} from "./rpcServer.js";

const servers: ScriptedServer[] = [];
const clients: Upstream[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(
  script: (body: unknown, n: number) => Reply | Promise<Reply>,
): Promise<ScriptedServer> {
  const server = await scriptedServer(script);
  servers.push(server);
  return server;
}

/** A clock that only moves when the client sleeps; every sleep is recorded. */
function virtualTime() {
  const time = { now: 0, sleeps: [] as number[] };
  return {
    time,
    now: () => time.now,
    sleep: async (ms: number) => {
      time.sleeps.push(ms);
      time.now += ms;
    },
  };
}

function logLines() {
  const lines: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
  return {
    lines,
    logger: {
      warn: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }),
    },
  };
}

function client(
  options: UpstreamOptions & { now?: () => number; sleep?: (ms: number) => Promise<void> },
  extra: { logger?: { warn(msg: string, fields?: Record<string, unknown>): void } } = {},
): Upstream {
  const { now, sleep } = virtualTime();
  const upstream = new Upstream({
    now,
    sleep,
    random: () => 0,
    rps: Infinity,
    ...options,
    ...extra,
  });
  clients.push(upstream);
  return upstream;
}

async function rejection(promise: Promise<unknown>): Promise<StateError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(StateError);
  return error as StateError;
}

const balance = (n: number) => `0x${(BigInt(n) * 1000n).toString(16)}`;

describe("Upstream batching", () => {
  it("sends the calls of one turn as one batch and gives each its own result", async () => {
    const server = await serve(healthy());
    const upstream = client({ urls: [server.url] });
    const results = await Promise.all([
      upstream.call("eth_blockNumber"),
      upstream.call("eth_getBalance", [address(1), "latest"]),
      upstream.call("eth_getBalance", [address(2), "latest"]),
    ]);
    expect(results).toEqual(["0x10", balance(1), balance(2)]);
    expect(server.seen).toHaveLength(1);
    expect(Array.isArray(server.seen[0]?.body)).toBe(true);
    expect(server.seen[0]?.body).toHaveLength(3);
    expect(upstream.stats()).toMatchObject({ requests: 1, calls: 3, batches: 1, retries: 0 });
  });

  it("splits a larger line into batches of maxBatch", async () => {
    const server = await serve(healthy());
    const upstream = client({ urls: [server.url], maxBatch: 4 });
    const calls = Array.from({ length: 10 }, (_, i) => ({
      method: "eth_getBalance",
      params: [address(i), "latest"],
    }));
    const results = await upstream.callAll(calls);
    expect(results.map((r) => (r.ok ? r.result : r.error))).toEqual(
      calls.map((_, i) => balance(i)),
    );
    expect(server.seen.map((s) => (s.body as unknown[]).length)).toEqual([4, 4, 2]);
  });

  it("matches batch answers by id, not by order", async () => {
    const server = await serve(healthy({ reverse: true }));
    const upstream = client({ urls: [server.url] });
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
    );
    expect(results).toEqual([balance(1), balance(2), balance(3), balance(4)]);
    expect(server.seen).toHaveLength(1);
  });

  it.each([
    ["an answer missing", (answers: unknown[]) => answers.slice(1), "no answer for id"],
    ["an answer twice", (answers: unknown[]) => [...answers, answers[0]], "twice"],
    [
      "an unknown id",
      (answers: unknown[]) => [...answers.slice(1), { jsonrpc: "2.0", id: 999, result: "0x1" }],
      "unknown id 999",
    ],
  ])("takes a batch answer with %s for a failure of the upstream", async (_, alter, reason) => {
    const server = await serve((body) => ({ body: alter((body as never[]).map(answerOf)) }));
    const upstream = client({ urls: [server.url], retries: 1 });
    const results = await upstream.callAll([
      { method: "eth_blockNumber" },
      { method: "eth_blockNumber" },
    ]);
    for (const result of results) {
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.error.code).toBe(StateErrorCode.UPSTREAM_UNAVAILABLE);
      expect(result.error.message).toContain(reason);
    }
    expect(server.seen).toHaveLength(2); // one retry, then no URL left
  });

  it.each([
    ["HTTP 400", (): Reply => ({ status: 400, body: "batch requests are not supported" })],
    ["HTTP 500", (): Reply => ({ status: 500, body: "" })],
    ["an object", (): Reply => ({ body: { jsonrpc: "2.0", id: 1, result: "0x1" } })],
    [
      "one error object",
      (): Reply => ({
        body: { jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch not allowed" } },
      }),
    ],
  ])(
    "falls back to single requests for good when a URL refuses a batch with %s",
    async (_, refusal) => {
      const server = await serve((body) =>
        Array.isArray(body) ? refusal() : { body: answerOf(body as never) },
      );
      const { lines, logger } = logLines();
      const upstream = client({ urls: [server.url] }, { logger });
      const first = await Promise.all(
        [1, 2, 3].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
      );
      expect(first).toEqual([balance(1), balance(2), balance(3)]);
      expect(server.seen.map((s) => Array.isArray(s.body))).toEqual([true, false, false, false]);
      const second = await Promise.all(
        [4, 5].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
      );
      expect(second).toEqual([balance(4), balance(5)]);
      expect(server.seen.slice(4).map((s) => Array.isArray(s.body))).toEqual([false, false]);
      expect(lines.filter((l) => l.msg.includes("refuses JSON-RPC batches"))).toHaveLength(1);
    },
  );
});

describe("Upstream rate limits and retries", () => {
  it("honours Retry-After of HTTP 429, then succeeds", async () => {
    const server = await serve((body, n) =>
      n < 2 ? { status: 429, headers: { "retry-after": "3" }, body: "slow down" } : healthy()(body),
    );
    const clock = virtualTime();
    const { lines, logger } = logLines();
    const upstream = client({ urls: [server.url], now: clock.now, sleep: clock.sleep }, { logger });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(clock.time.sleeps).toEqual([3000, 3000]);
    expect(server.seen).toHaveLength(3);
    expect(upstream.stats()).toMatchObject({
      requests: 3,
      retries: 2,
      rateLimited: 2,
      failovers: 0,
    });
    expect(lines.map((l) => l.msg)).toEqual([
      "Upstream rate limit, backing off",
      "Upstream rate limit, backing off",
    ]);
    expect(lines[0]?.fields).toMatchObject({ url: server.url, delayMs: 3000, reason: "HTTP 429" });
  });

  it("sends nothing more to a URL that answered 429 until its Retry-After has passed", async () => {
    const server = await serve((body, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "2" }, body: "" } : healthy()(body),
    );
    const time = { now: 0 };
    const waiting: { until: number; wake: () => void }[] = [];
    const sleep = (ms: number) =>
      new Promise<void>((wake) => waiting.push({ until: time.now + ms, wake }));
    const { lines, logger } = logLines();
    const upstream = client({ urls: [server.url], now: () => time.now, sleep }, { logger });
    const first = upstream.call("eth_blockNumber");
    while (waiting.length === 0) await new Promise((r) => setTimeout(r, 2));
    expect(waiting.map((w) => w.until)).toEqual([2000]); // the backoff of the first call

    const second = upstream.call("eth_getBalance", [address(3), "latest"]);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.seen).toHaveLength(1); // held, not sent into the rate limit
    expect(waiting.map((w) => w.until)).toEqual([2000, 2000]);

    time.now = 2000;
    for (const w of waiting.splice(0)) w.wake();
    expect(await Promise.all([first, second])).toEqual(["0x10", balance(3)]);
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]?.body).toHaveLength(2); // both in one batch after the pause
    expect(lines).toHaveLength(1);
  });

  it("holds the calls already in line for a URL once it answers 429", async () => {
    const server = await serve((body, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "2" }, body: "" } : healthy()(body),
    );
    const time = { now: 0 };
    const waiting: { until: number; wake: () => void }[] = [];
    const sleep = (ms: number) =>
      new Promise<void>((wake) => waiting.push({ until: time.now + ms, wake }));
    const upstream = client({
      urls: [server.url],
      maxConcurrent: 1,
      maxBatch: 1,
      now: () => time.now,
      sleep,
    });
    const first = upstream.call("eth_blockNumber");
    const second = upstream.call("eth_getBalance", [address(3), "latest"]); // waits for a slot
    while (waiting.length < 2) await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, 20));
    expect(server.seen).toHaveLength(1);
    expect(waiting.map((w) => w.until)).toEqual([2000, 2000]);

    time.now = 2000;
    for (const w of waiting.splice(0)) w.wake();
    expect(await Promise.all([first, second])).toEqual(["0x10", balance(3)]);
    expect(server.seen).toHaveLength(3);
  });

  it("honours Retry-After of HTTP 503 too, as a plain retry", async () => {
    const server = await serve((body, n) =>
      n === 0 ? { status: 503, headers: { "retry-after": "4" }, body: "" } : healthy()(body),
    );
    const clock = virtualTime();
    const upstream = client({ urls: [server.url], now: clock.now, sleep: clock.sleep });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(clock.time.sleeps).toEqual([4000]);
    expect(upstream.stats()).toMatchObject({ retries: 1, rateLimited: 0 });
  });

  it("caps the wait Retry-After asks for", async () => {
    const server = await serve((body, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "3600" }, body: "" } : healthy()(body),
    );
    const clock = virtualTime();
    const upstream = client({
      urls: [server.url],
      now: clock.now,
      sleep: clock.sleep,
      maxRetryAfterMs: 5000,
    });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(clock.time.sleeps).toEqual([5000]);
  });

  it("retries only the calls of a batch answered with a JSON-RPC rate-limit error", async () => {
    let limited = 0;
    const server = await serve((body) => {
      if (!Array.isArray(body)) return healthy()(body);
      return {
        body: body.map((call: { id: number; method: string }, i: number) => {
          if (i !== 1) return answerOf(call as never);
          limited++;
          return {
            jsonrpc: "2.0",
            id: call.id,
            error: { code: -32005, message: "request limit exceeded" },
          };
        }),
      };
    });
    const clock = virtualTime();
    const upstream = client({ urls: [server.url], now: clock.now, sleep: clock.sleep });
    const results = await Promise.all(
      [1, 2, 3].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
    );
    expect(results).toEqual([balance(1), balance(2), balance(3)]);
    expect(limited).toBe(1);
    expect(server.seen.map((s) => (Array.isArray(s.body) ? s.body.length : 1))).toEqual([3, 1]);
    expect(clock.time.sleeps).toEqual([125]); // backoffMs 250, first retry, no jitter
    expect(upstream.stats().rateLimited).toBe(1);
  });

  it("backs off exponentially with a cap", async () => {
    const server = await serve(() => ({ status: 503, body: "" }));
    const clock = virtualTime();
    const upstream = client({
      urls: [server.url],
      now: clock.now,
      sleep: clock.sleep,
      retries: 5,
      backoffMs: 100,
      maxBackoffMs: 1000,
    });
    await rejection(upstream.call("eth_blockNumber"));
    // random() = 0: half of 100, 200, 400, 800, then the cap of 1000
    expect(clock.time.sleeps).toEqual([50, 100, 200, 400, 500]);
    expect(server.seen).toHaveLength(6);
  });
});

describe("Upstream failover", () => {
  it("fails over to the next URL after its retries, and logs it once", async () => {
    const primary = await serve(() => ({ status: 503, body: "down for maintenance" }));
    const backup = await serve(healthy());
    const clock = virtualTime();
    const { lines, logger } = logLines();
    const upstream = client(
      { urls: [primary.url, backup.url], now: clock.now, sleep: clock.sleep, retries: 2 },
      { logger },
    );
    const results = await Promise.all([
      upstream.call("eth_blockNumber"),
      upstream.call("eth_getBalance", [address(7), "latest"]),
    ]);
    expect(results).toEqual(["0x10", balance(7)]);
    expect(primary.seen).toHaveLength(3); // the first try and two retries, each a batch of 2
    expect(backup.seen).toHaveLength(1);
    expect(clock.time.sleeps).toEqual([125, 250]);
    const stats = upstream.stats();
    expect(stats).toMatchObject({ requests: 4, failovers: 1, retries: 2 });
    expect(stats.byUrl).toEqual({
      [primary.url]: { requests: 3, failures: 3 },
      [backup.url]: { requests: 1, failures: 0 },
    });
    expect(lines.map((l) => l.msg)).toEqual(["Upstream failing, failing over"]);
    expect(lines[0]?.fields).toMatchObject({
      from: primary.url,
      to: backup.url,
      reason: "HTTP 503",
      calls: 2,
    });
  });

  it("passes over a failed URL for the cooldown, then uses the recovered primary again", async () => {
    let primaryUp = false;
    const primary = await serve((body) =>
      primaryUp ? healthy()(body) : { status: 502, body: "" },
    );
    const backup = await serve(healthy());
    const clock = virtualTime();
    const upstream = client({
      urls: [primary.url, backup.url],
      now: clock.now,
      sleep: clock.sleep,
      retries: 1,
      cooldownMs: 60_000,
    });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect([primary.seen.length, backup.seen.length]).toEqual([2, 1]);

    expect(await upstream.call("eth_blockNumber")).toBe("0x10"); // within the cooldown
    expect([primary.seen.length, backup.seen.length]).toEqual([2, 2]);

    clock.time.now += 60_000;
    expect(await upstream.call("eth_blockNumber")).toBe("0x10"); // still down: one attempt only
    expect([primary.seen.length, backup.seen.length]).toEqual([3, 3]);

    primaryUp = true;
    clock.time.now += 60_000;
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect([primary.seen.length, backup.seen.length]).toEqual([5, 3]);
  });

  it("fails over on a timeout of a stalled upstream", async () => {
    const stalled = await serve(() => "stall");
    const backup = await serve(healthy());
    const upstream = client({ urls: [stalled.url, backup.url], timeoutMs: 50, retries: 0 });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(stalled.seen).toHaveLength(1);
  });

  it("fails over on the first timeout while another URL is left, retrying only the last", async () => {
    const stalled = await serve(() => "stall");
    const backup = await serve(healthy());
    const upstream = client({ urls: [stalled.url, backup.url], timeoutMs: 50, retries: 3 });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(stalled.seen).toHaveLength(1);
    const alone = client({ urls: [stalled.url], timeoutMs: 50, retries: 2 });
    const error = await rejection(alone.call("eth_blockNumber"));
    expect(error.message).toContain(`${stalled.url} (no answer within 50 ms; 3 attempts)`);
  });

  it("warns once when requests in flight on a stalled upstream fail over one after another", async () => {
    const stalled = await serve(() => "stall");
    const backup = await serve(healthy());
    const { lines, logger } = logLines();
    const upstream = client(
      { urls: [stalled.url, backup.url], timeoutMs: 1000, retries: 0 },
      { logger },
    );
    const first = upstream.call("eth_blockNumber");
    // The second call leaves in a request of its own, once the first has reached the upstream.
    for (let i = 0; i < 900 && stalled.seen.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 1));
    expect(stalled.seen).toHaveLength(1);
    const second = upstream.call("eth_getBalance", [address(7), "latest"]);
    expect(await Promise.all([first, second])).toEqual(["0x10", balance(7)]);
    expect(stalled.seen).toHaveLength(2);
    expect(upstream.stats().failovers).toBe(2);
    expect(lines.map((l) => l.msg)).toEqual(["Upstream failing, failing over"]);
  });

  it("times out an answer whose body stops coming", async () => {
    const stalled = await serve(() => "stall-body");
    const upstream = client({ urls: [stalled.url], timeoutMs: 50, retries: 0 });
    const error = await rejection(upstream.call("eth_blockNumber"));
    expect(error.message).toContain(`${stalled.url} (no answer within 50 ms; 1 attempt)`);
  });

  it("rejects with STATE_UPSTREAM_UNAVAILABLE naming every URL tried, redacted, and its last reason", async () => {
    const refused = await closedPortUrl();
    const unavailable = await serve(() => ({ status: 503, body: "" }));
    const garbage = await serve(() => ({ body: "<html>upstream error</html>" }));
    const stalled = await serve(() => "stall");
    const secretGarbage = garbage.url
      .replace("http://", "http://user:pass@")
      .concat("rpc?key=secret");
    const upstream = client({
      urls: [refused, unavailable.url, secretGarbage, stalled.url],
      retries: 1,
      timeoutMs: 50,
    });
    const error = await rejection(upstream.call("eth_getBalance", [address(1), "latest"]));
    expect(error.code).toBe(StateErrorCode.UPSTREAM_UNAVAILABLE);
    expect(error.message).toContain("no upstream answered eth_getBalance");
    expect(error.message).toContain(`${refused} (connection failed (ECONNREFUSED); 2 attempts)`);
    expect(error.message).toContain(`${unavailable.url} (HTTP 503; 2 attempts)`);
    expect(error.message).toContain(`${garbage.url}rpc (answer is not JSON`);
    expect(error.message).toContain(`${stalled.url} (no answer within 50 ms; 2 attempts)`);
    expect(error.message).not.toMatch(/secret|pass|user/);
    expect(error.meta.urls).toHaveLength(4);
    expect(garbage.seen[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from("user:pass").toString("base64")}`,
    );
  });

  it("fails over at once on an HTTP 4xx that waiting does not change", async () => {
    const forbidden = await serve(() => ({ status: 401, body: "invalid API key" }));
    const backup = await serve(healthy());
    const upstream = client({ urls: [forbidden.url, backup.url], retries: 4 });
    expect(await upstream.call("eth_blockNumber")).toBe("0x10");
    expect(forbidden.seen).toHaveLength(1);
  });
});

describe("Upstream answers", () => {
  it("passes a JSON-RPC error through without retry or failover", async () => {
    const server = await serve(healthy());
    const backup = await serve(healthy());
    const upstream = client({ urls: [server.url, backup.url] });
    const error = await rejection(upstream.call("eth_getBalance", [address(1), "0x99"]));
    expect(error.code).toBe(StateErrorCode.UPSTREAM_ERROR);
    expect(error.message).toBe(
      `upstream ${server.url} answered eth_getBalance with error -32000: header not found`,
    );
    expect(error.meta).toMatchObject({
      url: server.url,
      method: "eth_getBalance",
      code: -32000,
      message: "header not found",
    });
    expect(server.seen).toHaveLength(1);
    expect(backup.seen).toHaveLength(0);
    expect(upstream.stats()).toMatchObject({ retries: 0, failovers: 0 });
  });

  it("gives callAll one result per call, an error failing none of the others", async () => {
    const server = await serve(healthy());
    const upstream = client({ urls: [server.url] });
    const results = await upstream.callAll([
      { method: "eth_getBalance", params: [address(1), "latest"] },
      { method: "eth_getBalance", params: [address(1), "0x99"] },
      { method: "eth_nonsense" },
      { method: "eth_blockNumber" },
    ]);
    expect(results[0]).toEqual({ ok: true, result: balance(1) });
    expect(results[3]).toEqual({ ok: true, result: "0x10" });
    expect(results[1]?.ok === false && results[1].error.meta.code).toBe(-32000);
    expect(results[2]?.ok === false && results[2].error.meta.code).toBe(-32601);
    expect(server.seen).toHaveLength(1);
  });

  it.each([
    ["a body that is not JSON", (): Reply => ({ body: "Bad Gateway" }), "answer is not JSON"],
    [
      "a wrong jsonrpc",
      (): Reply => ({ body: { jsonrpc: "1.0", id: 1, result: "0x1" } }),
      'answer has jsonrpc "1.0", not "2.0"',
    ],
    [
      "no result and no error",
      (): Reply => ({ body: { jsonrpc: "2.0", id: 1 } }),
      "answer has neither result nor error",
    ],
    [
      "another id",
      (): Reply => ({ body: { jsonrpc: "2.0", id: 7, result: "0x1" } }),
      "answer has id 7, not 1",
    ],
    [
      "a malformed error",
      (): Reply => ({ body: { jsonrpc: "2.0", id: 1, error: "oops" } }),
      "answer has an error that is not {code, message}",
    ],
    [
      "a body over the cap",
      (): Reply => ({ body: { jsonrpc: "2.0", id: 1, result: "0".repeat(5000) } }),
      "answer larger than 1000 bytes",
    ],
  ])("takes %s for a failure of the upstream", async (_, reply, reason) => {
    const server = await serve(reply);
    const upstream = client({ urls: [server.url], retries: 1, maxResponseBytes: 1000 });
    const error = await rejection(upstream.call("eth_blockNumber"));
    expect(error.code).toBe(StateErrorCode.UPSTREAM_UNAVAILABLE);
    expect(error.message).toContain(`${server.url} (${reason}`);
    expect(server.seen).toHaveLength(2);
  });

  it("accepts a null result", async () => {
    const server = await serve((body) => ({
      body: { jsonrpc: "2.0", id: (body as { id: number }).id, result: null },
    }));
    const upstream = client({ urls: [server.url] });
    expect(await upstream.call("eth_getTransactionByHash", [`0x${"00".repeat(32)}`])).toBeNull();
  });
});

describe("Upstream budget", () => {
  it("sends at most rps requests a second, in the order of the calls", async () => {
    const server = await serve(healthy());
    const clock = virtualTime();
    const upstream = client({
      urls: [server.url],
      rps: 10,
      maxBatch: 1,
      now: clock.now,
      sleep: clock.sleep,
    });
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
    );
    expect(results).toEqual([1, 2, 3, 4, 5].map(balance));
    expect(clock.time.sleeps).toEqual([100, 100, 100, 100]);
    expect(clock.time.now).toBe(400);
    const sent = server.seen.map((s) => (s.body as { params: string[] }).params[0]);
    expect(sent).toEqual([1, 2, 3, 4, 5].map(address));
  });

  it("keeps at most maxConcurrent requests in flight", async () => {
    const release: (() => void)[] = [];
    const server = await serve(
      (body) => new Promise<Reply>((resolve) => release.push(() => resolve(healthy()(body)))),
    );
    const upstream = client({ urls: [server.url], maxConcurrent: 2, maxBatch: 1 });
    const calls = [1, 2, 3, 4, 5].map((n) =>
      upstream.call("eth_getBalance", [address(n), "latest"]),
    );
    const seenSettles = async (n: number) => {
      while (server.seen.length < n) await new Promise((r) => setTimeout(r, 2));
      await new Promise((r) => setTimeout(r, 20)); // no more arrive meanwhile
      expect(server.seen).toHaveLength(n);
    };
    await seenSettles(2);
    release.shift()?.();
    await seenSettles(3);
    for (const free of release.splice(0)) free();
    await seenSettles(5);
    for (const free of release.splice(0)) free();
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4, 5].map(balance));
  });

  it("lets a burst out at once after a quiet time, then spaces requests", async () => {
    const server = await serve(healthy());
    const clock = virtualTime();
    const upstream = client({
      urls: [server.url],
      rps: 4,
      burst: 3,
      maxBatch: 1,
      now: clock.now,
      sleep: clock.sleep,
    });
    await Promise.all(
      [1, 2, 3, 4, 5].map((n) => upstream.call("eth_getBalance", [address(n), "latest"])),
    );
    expect(clock.time.sleeps).toEqual([250, 250]);
    expect(server.seen).toHaveLength(5);
  });

  it("lets calls that arrive while the budget holds the line join the next batch", async () => {
    const server = await serve(healthy());
    const clock = virtualTime();
    let upstream: Upstream | undefined;
    const late: Promise<unknown>[] = [];
    const sleep = async (ms: number) => {
      // Calls arrive while the budget holds the line back.
      late.push(
        (upstream as Upstream).call("eth_getBalance", [address(late.length + 10), "latest"]),
      );
      await clock.sleep(ms);
    };
    upstream = client({ urls: [server.url], rps: 1, now: clock.now, sleep });
    await upstream.call("eth_blockNumber");
    const second = upstream.call("eth_blockNumber");
    const third = upstream.call("eth_blockNumber");
    expect(await Promise.all([second, third])).toEqual(["0x10", "0x10"]);
    expect(await Promise.all(late)).toEqual([balance(10)]);
    expect(server.seen.map((s) => (Array.isArray(s.body) ? s.body.length : 1))).toEqual([1, 3]);
  });
});

describe("Upstream close", () => {
  /** A logger whose promise settles at the first line it gets: a backoff has begun. */
  function backoffSeen() {
    let seen = (): void => {};
    const begun = new Promise<void>((resolve) => {
      seen = resolve;
    });
    return { begun, logger: { warn: () => seen(), debug: () => seen() } };
  }

  it("rejects calls in flight and waiting in a backoff with STATE_UPSTREAM_CLOSED", async () => {
    const stalled = await serve(() => "stall");
    const limited = await serve(() => ({
      status: 429,
      headers: { "retry-after": "60" },
      body: "",
    }));
    const { begun, logger } = backoffSeen();
    const inFlight = new Upstream({ urls: [stalled.url], timeoutMs: 60_000 });
    const backingOff = new Upstream({ urls: [limited.url], logger }); // real timers
    const a = inFlight.call("eth_blockNumber");
    const b = backingOff.call("eth_blockNumber");
    await begun;
    while (stalled.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    inFlight.close();
    backingOff.close();
    for (const promise of [a, b]) {
      const error = await rejection(promise);
      expect(error.code).toBe(StateErrorCode.UPSTREAM_CLOSED);
      expect(error.message).toBe("upstream client closed before eth_blockNumber was answered");
    }
    const late = await rejection(inFlight.call("eth_blockNumber"));
    expect(late.code).toBe(StateErrorCode.UPSTREAM_CLOSED);
    expect(limited.seen).toHaveLength(1);
  });

  it("leaves no timer behind once closed", async () => {
    const failing = await serve(() => ({ status: 503, body: "" }));
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const { begun, logger } = backoffSeen();
    const upstream = new Upstream({ urls: [failing.url], backoffMs: 60_000, logger }); // real timers
    const pending = upstream.call("eth_blockNumber").catch((err: unknown) => err);
    await begun;
    const backingOff = timers();
    upstream.close();
    expect(timers()).toBe(backingOff - 1);
    expect(await pending).toMatchObject({ code: StateErrorCode.UPSTREAM_CLOSED });
  });
});

describe("Upstream inputs", () => {
  it("redacts credentials, query strings and key-like path segments from URLs", () => {
    expect(redactUrl("https://user:pass@host/path?key=secret")).toBe("https://host/path");
    expect(redactUrl("https://host:8545/rpc#frag")).toBe("https://host:8545/rpc");
    expect(redactUrl("https://mainnet.example.io/v3/0123456789abcdef0123456789abcdef")).toBe(
      "https://mainnet.example.io/v3/***",
    );
    expect(redactUrl("not a url with key abc")).toBe("<invalid URL>");
  });

  it.each([
    [{ urls: [] }, "at least one URL"],
    [{ urls: ["ftp://user:secret@host/"] }, "upstream URL ftp://host/ is not http or https"],
    [{ urls: ["nope?key=secret"] }, "upstream URL <invalid URL> is not a URL"],
    [{ urls: ["http://127.0.0.1:1/"], rps: 0 }, "upstream rps must be a positive number, got 0"],
    [
      { urls: ["http://127.0.0.1:1/"], maxBatch: 0 },
      "upstream maxBatch must be an integer of at least 1, got 0",
    ],
    [
      { urls: ["http://127.0.0.1:1/"], retries: 1.5 },
      "upstream retries must be an integer of at least 0, got 1.5",
    ],
  ])("refuses options %j", (options, message) => {
    expect(() => new Upstream(options as UpstreamOptions)).toThrowError(
      expect.objectContaining({
        code: StateErrorCode.UPSTREAM_INVALID_OPTIONS,
        message: expect.stringContaining(message),
      }),
    );
  });

  it("refuses callAll without an array", async () => {
    const upstream = client({ urls: ["http://127.0.0.1:1/"] });
    const error = await rejection(upstream.callAll({} as never));
    expect(error.code).toBe(StateErrorCode.UPSTREAM_INVALID_CALL);
  });

  it("refuses a call that cannot be sent, sending nothing", async () => {
    const server = await serve(healthy());
    const upstream = client({ urls: [server.url] });
    const bigint = await rejection(upstream.call("eth_getBalance", [1n]));
    expect(bigint.code).toBe(StateErrorCode.UPSTREAM_INVALID_CALL);
    expect(bigint.message).toContain("params of eth_getBalance are not JSON");
    const noMethod = await rejection(upstream.call(""));
    expect(noMethod.code).toBe(StateErrorCode.UPSTREAM_INVALID_CALL);
    expect(server.seen).toHaveLength(0);
  });
});
