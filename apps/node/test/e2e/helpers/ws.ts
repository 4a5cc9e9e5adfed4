import WebSocket from "ws";

/** A raw WebSocket JSON-RPC client that keeps every message it receives, in order. */
export interface WsClient {
  readonly socket: WebSocket;
  /** Every message received so far, parsed. */
  readonly messages: unknown[];
  send(body: unknown): void;
  /** Sends one request and resolves with the answer carrying its id. */
  request(method: string, params?: unknown[]): Promise<{ result?: unknown; error?: unknown }>;
  /** Resolves with the first message (from `from` on) that `match` accepts; fails after `ms`. */
  next(
    match: (msg: Record<string, unknown>) => boolean,
    ms?: number,
    from?: number,
  ): Promise<Record<string, unknown>>;
  /** The results of subscription `id`'s notifications, waiting until there are `count`. */
  notifications(id: string, count: number, ms?: number): Promise<unknown[]>;
  close(): Promise<void>;
}

let nextId = 1;

/** Connects; rejects with the HTTP status when the upgrade is refused. */
export function connect(url: string): Promise<WsClient> {
  const socket = new WebSocket(url.replace(/^http/, "ws"));
  const messages: unknown[] = [];
  const waiters = new Set<() => void>();
  socket.on("message", (data) => {
    messages.push(JSON.parse(String(data)));
    for (const wake of waiters) wake();
  });
  const waitFor = <T>(check: () => T | undefined, ms: number, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const done = check();
      if (done !== undefined) return resolve(done);
      const wake = () => {
        const found = check();
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(wake);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        reject(
          new Error(
            `timed out after ${ms} ms waiting for ${what}; got ${JSON.stringify(messages).slice(-600)}`,
          ),
        );
      }, ms);
      waiters.add(wake);
    });
  const client: WsClient = {
    socket,
    messages,
    send: (body) => socket.send(typeof body === "string" ? body : JSON.stringify(body)),
    async request(method, params = []) {
      const id = nextId++;
      const at = messages.length;
      client.send({ jsonrpc: "2.0", id, method, params });
      return (await client.next((m) => m.id === id, 5000, at)) as {
        result?: unknown;
        error?: unknown;
      };
    },
    next(match, ms = 5000, from = 0) {
      return waitFor(
        () =>
          messages
            .slice(from)
            .find((m): m is Record<string, unknown> => match(m as Record<string, unknown>)),
        ms,
        "a matching message",
      );
    },
    notifications(id, count, ms = 5000) {
      const results = () =>
        messages
          .filter(
            (m) =>
              (m as { method?: string }).method === "eth_subscription" &&
              (m as { params: { subscription: string } }).params.subscription === id,
          )
          .map((m) => (m as { params: { result: unknown } }).params.result);
      return waitFor(
        () => {
          const found = results();
          return found.length >= count ? found : undefined;
        },
        ms,
        `${count} notifications of ${id}`,
      );
    },
    close() {
      return new Promise((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once("close", () => resolve());
        socket.terminate();
      });
    },
  };
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(client));
    socket.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d;
      });
      res.on("end", () =>
        reject(
          Object.assign(new Error(`upgrade refused: ${res.statusCode} ${body}`), {
            status: res.statusCode,
            body,
          }),
        ),
      );
    });
    socket.once("error", reject);
  });
}
