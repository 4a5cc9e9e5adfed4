import { createWriteStream, type WriteStream } from "node:fs";
import type { AccessLogSink, AccessRecord } from "@nodex/rpc";
import type { Logger } from "@nodex/types";

/** Bytes of lines held while the file does not keep up; past it lines are dropped (and counted). */
const MAX_PENDING_CHARS = 64 * 1024 * 1024;
/** How long lines gather before they are written, unless `FLUSH_CHARS` of them come first. */
const FLUSH_MS = 100;
const FLUSH_CHARS = 256 * 1024;

/**
 * The access log (`--rpc-access-log`): one JSON line per record, appended to a file or written
 * to standard output. Lines gather for up to `FLUSH_MS` (or `FLUSH_CHARS`) and go out in one
 * asynchronous write, never on the path of an answer; `close` writes what is left.
 */
export class AccessLogWriter implements AccessLogSink {
  readonly #out: WriteStream | NodeJS.WriteStream;
  readonly #log: Logger;
  readonly #target: string;
  #pending = "";
  #timer: NodeJS.Timeout | undefined;
  #writing = false;
  #dropped = 0;
  #failed = false;
  #closed = false;
  #idle: (() => void) | undefined;

  private constructor(out: WriteStream | NodeJS.WriteStream, target: string, log: Logger) {
    this.#out = out;
    this.#target = target;
    this.#log = log;
  }

  /** Opens `target` for appending (`-`: standard output); rejects with the reason when it can't. */
  static async open(target: string, log: Logger): Promise<AccessLogWriter> {
    if (target === "-") return new AccessLogWriter(process.stdout, target, log);
    const stream = createWriteStream(target, { flags: "a", mode: 0o640 });
    await new Promise<void>((resolve, reject) => {
      stream.once("open", () => resolve());
      stream.once("error", (err: NodeJS.ErrnoException) =>
        reject(new Error(`cannot open the access log ${target}: ${err.code ?? err.message}`)),
      );
    });
    const writer = new AccessLogWriter(stream, target, log);
    stream.on("error", (err: NodeJS.ErrnoException) => writer.#fail(err));
    return writer;
  }

  write(record: AccessRecord): void {
    if (this.#closed) return;
    if (this.#pending.length > MAX_PENDING_CHARS) {
      this.#dropped++;
      return;
    }
    this.#pending += accessLine(record);
    if (!this.#writing) this.#schedule();
  }

  /** A write now when enough is held, else one within `FLUSH_MS`. */
  #schedule(): void {
    if (this.#pending === "") return;
    if (this.#pending.length >= FLUSH_CHARS) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#flush();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#flush();
      }, FLUSH_MS);
      this.#timer.unref();
    }
  }

  /** Writes what is held and closes the file (standard output stays open). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#writing) await new Promise<void>((resolve) => (this.#idle = resolve));
    if (this.#pending !== "" && !this.#failed) {
      const chunk = this.#pending;
      this.#pending = "";
      await new Promise<void>((resolve) => this.#out.write(chunk, () => resolve()));
    }
    if (this.#dropped > 0) this.#warnDropped();
    const out = this.#out;
    if (out !== process.stdout) {
      await new Promise<void>((resolve) => (out as WriteStream).end(() => resolve()));
    }
  }

  #flush(): void {
    if (this.#pending === "" || this.#writing) return;
    if (this.#failed) {
      this.#pending = "";
      return;
    }
    const chunk = this.#pending;
    this.#pending = "";
    this.#writing = true;
    this.#out.write(chunk, (err) => {
      this.#writing = false;
      if (err) this.#fail(err);
      if (this.#dropped > 0) this.#warnDropped();
      if (this.#closed) {
        const idle = this.#idle;
        this.#idle = undefined;
        idle?.();
      } else this.#schedule();
    });
  }

  #warnDropped(): void {
    this.#log.warn("Access log lines dropped: the log did not keep up", {
      file: this.#target,
      dropped: this.#dropped,
    });
    this.#dropped = 0;
  }

  #fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#log.error("Writing the access log failed; no more lines are written", {
      file: this.#target,
      error: err.message,
    });
  }
}

/**
 * A record as one JSON line, the fields in a fixed order; absent ones (no key, a WebSocket
 * message's HTTP fields) left out. Built by hand: `JSON.stringify` of the record costs a busy
 * node several times as much. Strings that could hold anything are escaped by JSON.stringify.
 */
export function accessLine(r: AccessRecord): string {
  let line = `{"time":"${r.time}","transport":"${r.transport}"`;
  if (r.remote !== undefined) line += `,"remote":${JSON.stringify(r.remote)}`;
  if (r.key !== undefined) line += `,"key":${JSON.stringify(r.key)}`;
  if (r.httpMethod !== undefined) line += `,"httpMethod":${JSON.stringify(r.httpMethod)}`;
  if (r.status !== undefined) line += `,"status":${r.status}`;
  return `${line},"methods":${JSON.stringify(r.methods)},"calls":${r.calls},"errors":[${r.errors.join(",")}],"ms":${r.ms},"bytesIn":${r.bytesIn},"bytesOut":${r.bytesOut}}\n`;
}
