import { nullLogger } from "@nodex/types";
import { describe, expect, it } from "vitest";
import type { AccessRecord } from "../../../src/accessLog.js";
import type { Dispatcher } from "../../../src/dispatcher.js";
import type { CallContext } from "../../../src/services.js";
import { SubscriptionManager } from "../../../src/subscriptions.js";
import { WsSession, type WsSocket } from "../../../src/ws/session.js";

// A WebSocket session against a fake socket: answers in order of completion, notifications
// held until their subscription's id is out, the in-flight bound, and the unread-bytes bound.

class FakeSocket implements WsSocket {
  sent: string[] = [];
  buffered = 0;
  terminated = false;
  send(text: string) {
    this.sent.push(text);
  }
  bufferedAmount() {
    return this.buffered;
  }
  terminate() {
    this.terminated = true;
  }
  close() {}
}

/** A dispatcher whose answers resolve when the test says so. */
function slowDispatcher() {
  const pending: { resolve: () => void; ctx: CallContext; body: string }[] = [];
  const dispatcher = {
    dispatch(body: string, ctx: CallContext) {
      return new Promise<string>((resolve) => {
        pending.push({ resolve: () => resolve(`answer to ${body}`), ctx, body });
      });
    },
  } as unknown as Dispatcher;
  return { dispatcher, pending };
}

function events() {
  const heads: ((change: never) => void)[] = [];
  return {
    heads,
    events: {
      onHeadChange: (l: (change: never) => void) => {
        heads.push(l);
        return () => {};
      },
      onNewTransaction: () => () => {},
    },
  };
}

const opts = { maxBufferedBytes: 1000, maxInFlight: 2, hosted: false, remote: "test" };

describe("WsSession", () => {
  it("holds a new subscription's notifications until the answer with its id is sent", async () => {
    const socket = new FakeSocket();
    const { dispatcher, pending } = slowDispatcher();
    const subs = new SubscriptionManager(events().events, nullLogger);
    const session = new WsSession(socket, opts, {
      dispatcher,
      subscriptions: subs,
      logger: nullLogger,
    });
    session.onMessage("subscribe");
    const id = pending[0]!.ctx.connection!.subscribe({ kind: "newHeads" });
    session.notify(id, "first");
    session.notify(id, "second");
    expect(socket.sent).toEqual([]);
    pending[0]!.resolve();
    await new Promise((r) => setTimeout(r, 0));
    expect(socket.sent).toEqual(["answer to subscribe", "first", "second"]);
    session.notify(id, "third");
    expect(socket.sent.at(-1)).toBe("third");
  });

  it("answers -32011 past maxInFlight messages awaiting answers, and serves again after", async () => {
    const socket = new FakeSocket();
    const { dispatcher, pending } = slowDispatcher();
    const session = new WsSession(socket, opts, {
      dispatcher,
      subscriptions: undefined,
      logger: nullLogger,
    });
    session.onMessage("a");
    session.onMessage("b");
    session.onMessage("c");
    expect(pending).toHaveLength(2);
    expect(JSON.parse(socket.sent[0]!)).toMatchObject({
      id: null,
      error: { code: -32011, message: expect.stringContaining("at most 2") },
    });
    pending[1]!.resolve();
    await new Promise((r) => setTimeout(r, 0));
    session.onMessage("d");
    expect(pending.map((p) => p.body)).toEqual(["a", "b", "d"]);
  });

  it("counts and logs a message refused past maxInFlight as one other call", () => {
    const socket = new FakeSocket();
    const { dispatcher } = slowDispatcher();
    const calls: unknown[][] = [];
    const records: AccessRecord[] = [];
    const session = new WsSession(socket, opts, {
      dispatcher,
      subscriptions: undefined,
      logger: nullLogger,
      metrics: {
        call: (...args: unknown[]) => calls.push(args),
        rateLimited: () => {},
        unauthorized: () => {},
        methodLabel: (name: string) => name,
      },
      accessLog: { write: (r) => records.push(r) },
    });
    session.onMessage("a");
    session.onMessage("b");
    session.onMessage("third");
    expect(calls).toEqual([["other", undefined, -32011, 0]]);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      transport: "ws",
      remote: "test",
      methods: ["other"],
      calls: 1,
      errors: [-32011],
      bytesIn: 5,
      bytesOut: Buffer.byteLength(socket.sent[0]!),
    });
  });

  it("drops a client past maxBufferedBytes unread, ending its subscriptions", () => {
    const socket = new FakeSocket();
    const { dispatcher } = slowDispatcher();
    const subs = new SubscriptionManager(events().events, nullLogger);
    const warnings: unknown[] = [];
    const logger = {
      ...nullLogger,
      warn: (msg: string, meta: unknown) => warnings.push([msg, meta]),
    };
    const session = new WsSession(socket, opts, { dispatcher, subscriptions: subs, logger });
    const id = subs.subscribe(session, { kind: "newHeads" });
    session.notify(id, "x");
    expect(socket.terminated).toBe(false);
    socket.buffered = 1001;
    session.notify(id, "y");
    expect(socket.terminated).toBe(true);
    expect(session.closed).toBe(true);
    expect(subs.size).toBe(0);
    expect(warnings).toEqual([
      [
        "WebSocket client dropped: it does not read what it is sent",
        { remote: "test", bufferedBytes: 1001, limit: 1000 },
      ],
    ]);
    session.notify(id, "z");
    expect(socket.sent).toEqual(["x", "y"]);
  });
});
