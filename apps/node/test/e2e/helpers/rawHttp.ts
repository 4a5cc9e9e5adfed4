import { connect, type Socket } from "node:net";

/** One HTTP answer as a raw client reads it. */
export interface RawAnswer {
  readonly status: number;
  /** Field names in lower case; the last of a repeated field. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * A client on a plain TCP socket: what it writes reaches the node byte for byte (nothing
 * normalizes the request), and it reads HTTP/1.x answers (Content-Length framing, or up to
 * the close) and raw bytes as they arrive.
 */
export class RawClient {
  readonly socket: Socket;
  #buf = Buffer.alloc(0);
  #closed = false;
  #waiters: (() => void)[] = [];

  constructor(port: number, host = "127.0.0.1") {
    this.socket = connect(port, host);
    this.socket.on("data", (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#wake();
    });
    this.socket.on("close", () => {
      this.#closed = true;
      this.#wake();
    });
    this.socket.on("error", () => {});
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  async #more(): Promise<void> {
    if (this.#closed) throw new Error(`connection closed; unread: ${this.#buf.toString()}`);
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next answer; 1xx answers included. */
  async answer(): Promise<RawAnswer> {
    for (;;) {
      const end = this.#buf.indexOf("\r\n\r\n");
      if (end !== -1) {
        const [statusLine, ...lines] = this.#buf.subarray(0, end).toString("latin1").split("\r\n");
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(":");
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const status = Number(statusLine!.split(" ")[1]);
        const stated = headers["content-length"];
        // Answers without a length end at the close.
        const length =
          status < 200 || status === 204
            ? 0
            : stated !== undefined
              ? Number(stated)
              : this.#closed
                ? this.#buf.length - end - 4
                : Number.POSITIVE_INFINITY;
        if (this.#buf.length >= end + 4 + length) {
          const body = this.#buf.subarray(end + 4, end + 4 + length).toString("utf8");
          this.#buf = this.#buf.subarray(end + 4 + length);
          return { status, headers, body };
        }
      }
      await this.#more();
    }
  }

  /** Resolves once the server has closed the connection, with what it sent unread. */
  async closed(): Promise<string> {
    while (!this.#closed) await this.#more().catch(() => {});
    return this.#buf.toString();
  }

  /** The next `n` bytes received, framed or not (WebSocket frames). */
  async bytes(n: number): Promise<Buffer> {
    while (this.#buf.length < n) await this.#more();
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  end(): void {
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** A masked WebSocket frame, as a client must send it; text (0x1) unless `opcode` says. */
export function wsClientFrame(payload: Buffer | string, opcode = 0x1): Buffer {
  const data = typeof payload === "string" ? Buffer.from(payload) : payload;
  const mask = Buffer.from([0x5a, 0x13, 0xc7, 0x2e]);
  const masked = Buffer.from(data.map((b, i) => b ^ mask[i % 4]!));
  let head: Buffer;
  if (data.length < 126) head = Buffer.from([0x80 | opcode, 0x80 | data.length]);
  else if (data.length < 65536) {
    head = Buffer.alloc(4);
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(data.length, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(data.length), 2);
  }
  return Buffer.concat([head, mask, masked]);
}

/** Reads one unmasked server frame: its opcode and payload. */
export async function readServerFrame(
  client: RawClient,
): Promise<{ opcode: number; payload: Buffer }> {
  const [first, second] = await client.bytes(2);
  let length = second! & 0x7f;
  if (length === 126) length = (await client.bytes(2)).readUInt16BE(0);
  else if (length === 127) length = Number((await client.bytes(8)).readBigUInt64BE(0));
  return { opcode: first! & 0x0f, payload: await client.bytes(length) };
}

/** The request that opens a WebSocket on `/`. */
export const WS_UPGRADE =
  "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
