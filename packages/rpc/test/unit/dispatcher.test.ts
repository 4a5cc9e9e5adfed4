import { NodexError } from "@nodex/types";
import { describe, expect, it, vi } from "vitest";
import {
  Dispatcher,
  defineModule,
  MethodRegistry,
  method,
  p,
  RawJson,
  r,
} from "../../src/index.js";
import { fakeServices, logger } from "./fixtures.js";

let lastOwn: Buffer | undefined;
let lastShared: Buffer | undefined;

const test = defineModule("debug", {
  echo: method({
    params: [p.quantity, p.optional(p.boolean, true)],
    result: r.json,
    handler: (_s, [n, flag]) => ({ n: n.toString(), flag }),
  }),
  boom: method({
    params: [],
    result: r.json,
    handler: () => {
      throw new Error("secret /home/user/path details");
    },
  }),
  domain: method({
    params: [],
    result: r.json,
    handler: () => {
      throw new NodexError("SOMETHING_UNMAPPED", "unmapped domain failure");
    },
  }),
  slow: method({
    params: [],
    result: r.string,
    handler: () => new Promise<string>((resolve) => setTimeout(() => resolve("late"), 200)),
  }),
  traceSlow: method({
    params: [],
    result: r.string,
    handler: () => new Promise<string>((resolve) => setTimeout(() => resolve("late"), 200)),
  }),
  negative: method({ params: [], result: r.quantity, handler: () => -1n }),
  asyncFail: method({
    params: [],
    result: r.json,
    handler: async () => {
      throw new Error("async failure");
    },
  }),
  big: method({
    params: [p.quantity],
    result: r.string,
    handler: (_s, [n]) => "x".repeat(Number(n)),
  }),
  raw: method({
    params: [p.quantity],
    result: r.raw,
    handler: (_s, [n]) => new RawJson(`[${Array(Number(n)).fill('"xx"').join(",")}]`),
  }),
  rawOwn: method({
    params: [p.quantity],
    result: r.raw,
    handler: async (_s, [n]) => {
      // 40 bytes of room before the result and 1 after, in a buffer of its own.
      const json = Buffer.from(`[${Array(Number(n)).fill('"xé"').join(",")}]`, "utf8");
      const buffer = Buffer.alloc(40 + json.length + 1, 0x2a);
      json.copy(buffer, 40);
      lastOwn = buffer;
      return new RawJson(buffer.subarray(40, 40 + json.length), { ownBuffer: true });
    },
  }),
  rawShared: method({
    params: [],
    result: r.raw,
    handler: async () => {
      const buffer = Buffer.alloc(100, 0x2a);
      buffer.write("[1]", 40);
      lastShared = buffer;
      return new RawJson(buffer.subarray(40, 43));
    },
  }),
  rawBytes: method({
    params: [p.quantity],
    result: r.raw,
    handler: async (_s, [n]) =>
      new RawJson(Buffer.from(`[${Array(Number(n)).fill('"xé"').join(",")}]`, "utf8")),
  }),
});

function dispatcher(
  opts: Partial<{
    maxBatchSize: number;
    maxResponseBytes: number;
    timeoutMs: number;
    budgets: { trace?: number };
  }> = {},
) {
  const registry = new MethodRegistry([test], {
    enabled: new Set(["debug"]),
    hostedOff: new Set(),
  });
  return new Dispatcher(
    { maxBatchSize: 10, maxResponseBytes: 10_000, timeoutMs: 0, ...opts },
    { registry, services: fakeServices(), logger },
  );
}

const ctx = { hosted: false };
const run = async (d: Dispatcher, body: unknown) => {
  const out = await d.dispatch(typeof body === "string" ? body : JSON.stringify(body), ctx);
  return out === undefined ? undefined : JSON.parse(out);
};
const req = (method: string, params: unknown[] = [], id: unknown = 1) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

describe("Dispatcher", () => {
  it("holds each request while a block the node made is being written", async () => {
    let written: () => void = () => {};
    let writing: Promise<void> | undefined = new Promise<void>((resolve) => {
      written = resolve;
    });
    let ran = 0;
    const counting = defineModule("debug", {
      count: method({ params: [], result: r.quantity, handler: () => BigInt(++ran) }),
    });
    const d = new Dispatcher(
      { maxBatchSize: 10, maxResponseBytes: 10_000, timeoutMs: 0 },
      {
        registry: new MethodRegistry([counting], {
          enabled: new Set(["debug"]),
          hostedOff: new Set(),
        }),
        services: fakeServices({
          chain: { blockNumber: () => 5n, gasPrice: () => 1000n, writing: () => writing },
        }),
        logger,
      },
    );
    const held = d.dispatch(JSON.stringify(req("debug_count")), ctx);
    expect(held).toBeInstanceOf(Promise);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ran).toBe(0);
    written();
    writing = undefined;
    expect(JSON.parse((await held) as string).result).toBe("0x1");
    // Nothing being written: answered at once, in the same turn.
    const now = d.dispatch(JSON.stringify(req("debug_count")), ctx);
    expect(typeof now).toBe("string");
    expect(JSON.parse(now as string).result).toBe("0x2");
  });

  it("fills optional trailing parameters with their defaults, also for null", async () => {
    const d = dispatcher();
    expect((await run(d, req("debug_echo", ["0x10"]))).result).toEqual({ n: "16", flag: true });
    expect((await run(d, req("debug_echo", ["0x10", null]))).result).toEqual({
      n: "16",
      flag: true,
    });
    expect((await run(d, req("debug_echo", ["0x10", false]))).result).toEqual({
      n: "16",
      flag: false,
    });
  });

  it("answers a codec error as -32602 naming the argument", async () => {
    const res = await run(dispatcher(), req("debug_echo", ["0x01"]));
    expect(res.error).toEqual({
      code: -32602,
      message: "invalid argument 0: hex string has leading zero digits",
    });
    const second = await run(dispatcher(), req("debug_echo", ["0x1", "yes"]));
    expect(second.error).toEqual({
      code: -32602,
      message: "invalid argument 1: expected a boolean, got string",
    });
  });

  it("hides unexpected errors behind -32603 with no stack or path", async () => {
    const res = await run(dispatcher(), req("debug_boom"));
    expect(res.error).toEqual({ code: -32603, message: "internal error" });
    const domain = await run(dispatcher(), req("debug_domain"));
    expect(domain.error).toEqual({ code: -32603, message: "internal error" });
  });

  it("answers a result its encoder cannot encode, and an async failure, with -32603", async () => {
    expect((await run(dispatcher(), req("debug_negative"))).error).toEqual({
      code: -32603,
      message: "internal error",
    });
    expect((await run(dispatcher(), req("debug_asyncFail"))).error).toEqual({
      code: -32603,
      message: "internal error",
    });
  });

  it("mixes synchronous and asynchronous members in a batch, in order", async () => {
    const res = await run(dispatcher(), [
      req("debug_slow", [], 1),
      req("debug_echo", ["0x2"], 2),
      req("debug_slow", [], 3),
    ]);
    expect(res.map((r: { id: number }) => r.id)).toEqual([1, 2, 3]);
    expect(res[0].result).toBe("late");
    expect(res[1].result).toEqual({ n: "2", flag: true });
  });

  it("answers a call over the time limit with -32011", async () => {
    const res = await run(dispatcher({ timeoutMs: 20 }), req("debug_slow"));
    expect(res.error).toEqual({
      code: -32011,
      message: "request timed out: debug_slow ran over the time limit",
    });
    expect((await run(dispatcher(), req("debug_slow"))).result).toBe("late");
  });

  it("answers a method over its class's time budget with -32011, others as before", async () => {
    const d = dispatcher({ budgets: { trace: 20 } });
    expect((await run(d, req("debug_traceSlow"))).error).toEqual({
      code: -32011,
      message: "request timed out: debug_traceSlow ran over its time budget of 20 ms (traces)",
    });
    expect((await run(d, req("debug_slow"))).result).toBe("late");
    // The sooner end wins.
    const both = dispatcher({ timeoutMs: 20, budgets: { trace: 100_000 } });
    expect((await run(both, req("debug_traceSlow"))).error).toEqual({
      code: -32011,
      message: "request timed out: debug_traceSlow ran over the time limit",
    });
  });

  it("answers a response over the size limit with -32011", async () => {
    const d = dispatcher({ maxResponseBytes: 1000 });
    expect((await run(d, req("debug_big", ["0x64"]))).result).toHaveLength(100);
    expect((await run(d, req("debug_big", ["0x7d0"]))).error).toEqual({
      code: -32011,
      message: "response size limit of 1000 bytes exceeded",
    });
  });

  it("puts a serialized result in the response as it is, within the size limit", async () => {
    const d = dispatcher({ maxResponseBytes: 1000 });
    expect((await run(d, req("debug_raw", ["0x3"]))).result).toEqual(["xx", "xx", "xx"]);
    expect((await run(d, req("debug_raw", ["0x0"]))).result).toEqual([]);
    expect((await run(d, req("debug_raw", ["0x190"]))).error?.code).toBe(-32011);
  });

  it("answers a result that came as bytes with the same text, and as bytes to a transport that writes them", async () => {
    const d = dispatcher({ maxResponseBytes: 1000 });
    for (const id of [7, "é-1", null]) {
      const body = JSON.stringify(req("debug_rawBytes", ["0x3"], id));
      const expected = JSON.stringify({ jsonrpc: "2.0", id, result: ["xé", "xé", "xé"] });
      expect(await d.dispatch(body, ctx)).toBe(expected);
      const wire = await d.dispatchWire(body, ctx);
      expect(wire).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(wire as Uint8Array).toString("utf8")).toBe(expected);
    }
    // The limit counts bytes: 200 × `"xé",` is 1,200 bytes.
    expect((await run(d, req("debug_rawBytes", ["0xc8"]))).error?.code).toBe(-32011);
  });

  it("writes the head and the brace around a result in a buffer of its own when they fit, and copies it otherwise", async () => {
    const d = dispatcher();
    const expected = (id: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result: ["xé", "xé"] });
    // `{"jsonrpc":"2.0","id":7,"result":` is 33 bytes: it fits in the 40 before.
    const fits = (await d.dispatchWire(
      JSON.stringify(req("debug_rawOwn", ["0x2"], 7)),
      ctx,
    )) as Uint8Array;
    expect(Buffer.from(fits).toString("utf8")).toBe(expected(7));
    expect(fits.buffer).toBe(lastOwn!.buffer);
    // A longer id does not: copied, the buffer left as it was.
    const id = "an id too long for the room";
    const copied = (await d.dispatchWire(
      JSON.stringify(req("debug_rawOwn", ["0x2"], id)),
      ctx,
    )) as Uint8Array;
    expect(Buffer.from(copied).toString("utf8")).toBe(expected(id));
    expect(copied.buffer).not.toBe(lastOwn!.buffer);
    expect(lastOwn!.subarray(0, 40).every((b) => b === 0x2a)).toBe(true);
    // Bytes whose buffer is not said to be theirs: what is around them is never written.
    const shared = (await d.dispatchWire(
      JSON.stringify(req("debug_rawShared", [], 1)),
      ctx,
    )) as Uint8Array;
    expect(Buffer.from(shared).toString("utf8")).toBe('{"jsonrpc":"2.0","id":1,"result":[1]}');
    expect(lastShared!.toString("latin1")).toBe(`${"*".repeat(40)}[1]${"*".repeat(57)}`);
  });

  it("joins a batch with results as bytes and as text, in order, as bytes or as text", async () => {
    const d = dispatcher();
    const batch = JSON.stringify([
      req("debug_rawBytes", ["0x1"], 1),
      req("debug_echo", ["0x2"], 2),
      req("debug_rawBytes", ["0x2"], 3),
    ]);
    const expected = JSON.stringify([
      { jsonrpc: "2.0", id: 1, result: ["xé"] },
      { jsonrpc: "2.0", id: 2, result: { n: "2", flag: true } },
      { jsonrpc: "2.0", id: 3, result: ["xé", "xé"] },
    ]);
    expect(await d.dispatch(batch, ctx)).toBe(expected);
    const wire = await d.dispatchWire(batch, ctx);
    expect(Buffer.from(wire as Uint8Array).toString("utf8")).toBe(expected);
    // Text alone stays text.
    expect(await d.dispatchWire(JSON.stringify([req("debug_echo", ["0x2"], 2)]), ctx)).toBe(
      JSON.stringify([{ jsonrpc: "2.0", id: 2, result: { n: "2", flag: true } }]),
    );
  });

  it("counts the response size limit across a batch", async () => {
    const d = dispatcher({ maxResponseBytes: 1000 });
    const res = await run(d, [
      req("debug_big", ["0x190"], 1),
      req("debug_big", ["0x190"], 2),
      req("debug_big", ["0x190"], 3),
    ]);
    expect(res[0].result).toHaveLength(400);
    expect(res[1].result).toHaveLength(400);
    expect(res[2]).toEqual({
      jsonrpc: "2.0",
      id: 3,
      error: { code: -32011, message: "response size limit of 1000 bytes exceeded" },
    });
  });

  it("answers deeply nested JSON as an invalid batch member", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const res = await run(dispatcher(), deep);
    expect(res).toEqual([
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "invalid request: expected a request object" },
      },
    ]);
  });
});

describe("Dispatcher batch limit", () => {
  it("refuses a batch over the limit without parsing it, with the same error", async () => {
    const d = dispatcher({ maxBatchSize: 10 });
    const body = JSON.stringify(Array.from({ length: 11 }, (_, i) => req("echo", ["0x1"], i)));
    const parse = vi.spyOn(JSON, "parse");
    let out: string | undefined;
    try {
      out = (await d.dispatch(body, ctx)) as string;
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
    expect(JSON.parse(out!)).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: "invalid request: batch of 11 requests exceeds the limit of 10",
      },
    });
  });

  it("answers a batch at the limit, however it is laid out", async () => {
    const d = dispatcher({ maxBatchSize: 3 });
    const body = `  [ ${JSON.stringify(req("echo", ["0x1"], "a,]"))} ,\n${JSON.stringify(req("echo", ["0x2"], 2))}, [ ] ]`;
    const out = (await run(d, body)) as { id: unknown }[];
    expect(out.map((o) => o.id)).toEqual(["a,]", 2, null]);
  });
});
