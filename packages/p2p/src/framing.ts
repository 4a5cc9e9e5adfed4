import type { MessageStream } from "@libp2p/interface";
import { P2PError, P2PErrorCode } from "./errors.js";

/**
 * Length-prefixed messages on a libp2p stream: each frame is the payload's length as an
 * unsigned LEB128 varint (minimal, at most 5 bytes), then the payload. Every read names the
 * largest payload it accepts; a longer declared length fails before the payload is read.
 */

/** The most bytes a length prefix may take (lengths below 2^35; every cap is far lower). */
export const MAX_LENGTH_PREFIX_BYTES = 5;

export function encodeVarint(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`cannot encode ${value} as a varint`);
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return Uint8Array.from(out);
}

/** One frame: the varint length of `payload`, then `payload`. */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  const prefix = encodeVarint(payload.length);
  const frame = new Uint8Array(prefix.length + payload.length);
  frame.set(prefix);
  frame.set(payload, prefix.length);
  return frame;
}

export interface FrameIOOptions {
  /** Abort the wait: the read or write fails with `P2PError` `TIMEOUT`. */
  readonly signal?: AbortSignal;
}

/**
 * Writes one frame, waiting for the stream to drain when its write buffer is full. A stream
 * closed meanwhile fails with `STREAM_CLOSED`, an aborted signal with `TIMEOUT`.
 */
export async function writeFrame(
  stream: MessageStream,
  payload: Uint8Array,
  opts: FrameIOOptions = {},
): Promise<void> {
  throwIfAborted(opts.signal);
  try {
    if (!stream.send(encodeFrame(payload))) await stream.onDrain(signalOption(opts.signal));
  } catch (err) {
    throwIfAborted(opts.signal);
    throw closed(err);
  }
}

/**
 * Reads frames from a stream, one at a time. Data past a frame is kept for the next read.
 * Call `release()` when done so the stream buffers (up to its own limit) instead of this reader.
 */
export class FrameReader {
  readonly #source: AsyncIterator<Uint8Array | { subarray(): Uint8Array }>;
  /** Received bytes not yet consumed, oldest first. */
  readonly #chunks: Uint8Array[] = [];
  #buffered = 0;
  #ended = false;
  /** A `next()` of the source still running after a read gave up on it (timeout). */
  #pending: Promise<IteratorResult<Uint8Array | { subarray(): Uint8Array }>> | undefined;

  constructor(stream: MessageStream) {
    this.#source = stream[Symbol.asyncIterator]();
  }

  /**
   * The next frame's payload, of at most `maxBytes`; undefined when the stream ended cleanly
   * between frames. Fails with `P2PError`: `FRAME_TOO_LARGE` (the declared length is over
   * `maxBytes`), `FRAME_MALFORMED` (a bad length prefix, or the stream ended inside a frame),
   * `TIMEOUT` (the signal aborted), `STREAM_CLOSED` (the stream was reset).
   */
  async read(maxBytes: number, opts: FrameIOOptions = {}): Promise<Uint8Array | undefined> {
    let length: number | undefined;
    let prefixBytes = 0;
    for (;;) {
      const header = this.#parsePrefix(maxBytes);
      if (header !== undefined) {
        [length, prefixBytes] = header;
        break;
      }
      if (this.#ended) {
        if (this.#buffered === 0) return undefined;
        throw new P2PError(P2PErrorCode.FRAME_MALFORMED, "the stream ended inside a length prefix");
      }
      await this.#pull(opts.signal);
    }
    while (this.#buffered < prefixBytes + length) {
      if (this.#ended) {
        throw new P2PError(
          P2PErrorCode.FRAME_MALFORMED,
          `the stream ended inside a frame: ${this.#buffered - prefixBytes} of ${length} bytes`,
          { length, received: this.#buffered - prefixBytes },
        );
      }
      await this.#pull(opts.signal);
    }
    this.#take(prefixBytes);
    return this.#take(length);
  }

  /** Stops reading from the stream. */
  release(): void {
    this.#pending?.catch(() => {});
    void this.#source.return?.()?.catch(() => {});
  }

  /** `[length, prefix size]` once the whole prefix is buffered; undefined before. */
  #parsePrefix(maxBytes: number): [number, number] | undefined {
    let value = 0;
    let scale = 1;
    let index = 0;
    for (const chunk of this.#chunks) {
      for (const byte of chunk) {
        value += (byte & 0x7f) * scale;
        index++;
        if ((byte & 0x80) === 0) {
          if (byte === 0 && index > 1) {
            throw new P2PError(
              P2PErrorCode.FRAME_MALFORMED,
              "the length prefix is not minimal (a trailing zero byte)",
            );
          }
          if (value > maxBytes) throw tooLarge(value, maxBytes);
          return [value, index];
        }
        if (index >= MAX_LENGTH_PREFIX_BYTES) {
          throw new P2PError(
            P2PErrorCode.FRAME_MALFORMED,
            `the length prefix is longer than ${MAX_LENGTH_PREFIX_BYTES} bytes`,
          );
        }
        scale *= 0x80;
        // Over the cap already with the bits read so far: no need to wait for the rest.
        if (value > maxBytes || scale > maxBytes) throw tooLarge(scale, maxBytes);
      }
    }
    return undefined;
  }

  /** Removes and returns the first `count` buffered bytes (all buffered: the caller checks). */
  #take(count: number): Uint8Array {
    const out = new Uint8Array(count);
    let filled = 0;
    while (filled < count) {
      const chunk = this.#chunks[0]!;
      const part = Math.min(chunk.length, count - filled);
      out.set(chunk.subarray(0, part), filled);
      filled += part;
      if (part === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(part);
    }
    this.#buffered -= count;
    return out;
  }

  async #pull(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    const next = this.#pending ?? this.#source.next();
    this.#pending = next;
    let result: IteratorResult<Uint8Array | { subarray(): Uint8Array }>;
    try {
      result = await raceAbort(next, signal);
    } catch (err) {
      if (err instanceof P2PError) {
        next.catch(() => {});
        throw err;
      }
      this.#pending = undefined;
      throw closed(err);
    }
    this.#pending = undefined;
    if (result.done === true) {
      this.#ended = true;
      return;
    }
    const bytes = result.value.subarray();
    if (bytes.length > 0) {
      this.#chunks.push(bytes);
      this.#buffered += bytes.length;
    }
  }
}

function tooLarge(length: number, maxBytes: number): P2PError {
  return new P2PError(
    P2PErrorCode.FRAME_TOO_LARGE,
    `a frame of ${length} bytes is over the cap of ${maxBytes}`,
    { length, maxBytes },
  );
}

function closed(err: unknown): P2PError {
  if (err instanceof P2PError) return err;
  return new P2PError(
    P2PErrorCode.STREAM_CLOSED,
    `the stream closed: ${(err as Error)?.message ?? String(err)}`,
    {},
    { cause: err },
  );
}

function timedOut(): P2PError {
  return new P2PError(P2PErrorCode.TIMEOUT, "the peer did not answer in time");
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw timedOut();
}

function signalOption(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal === undefined ? {} : { signal };
}

/** `promise`, or a `TIMEOUT` error as soon as `signal` aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(timedOut());
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
