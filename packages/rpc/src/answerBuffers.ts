/**
 * Buffers for large answers made on this thread (`eth_getLogs` of a few hundred logs), used
 * again once the socket has taken an answer's bytes. A fresh buffer of a few hundred kB costs
 * about 2 ms on the development machine (the system faults its pages in one by one), more than
 * the rest of such an answer; one used before costs nothing of the kind.
 *
 * A buffer goes back to the free list only through `releaseAnswerBuffer`, which the HTTP layer
 * calls once the socket's write of an answer is done, and only if it came from here: an answer
 * that goes anywhere else (WebSocket text, a batch, an error in its place) leaves its buffer to
 * the garbage collector.
 */

/** Free buffers kept at most. */
const KEEP = 4;
/** The smallest buffer made, and the largest kept. */
const MIN_BYTES = 64 * 1024;
const MAX_KEPT_BYTES = 4 * 1024 * 1024;

const free: ArrayBuffer[] = [];
/** Every buffer handed out (and not yet collected). */
const made = new WeakSet<ArrayBuffer>();

/** A buffer of at least `size` bytes, free or new; it is the caller's until released. */
export function takeAnswerBuffer(size: number): Buffer {
  for (let i = free.length - 1; i >= 0; i--) {
    const buffer = free[i]!;
    if (buffer.byteLength >= size) {
      free.splice(i, 1);
      return Buffer.from(buffer);
    }
  }
  let capacity = MIN_BYTES;
  while (capacity < size) capacity *= 2;
  const buffer = Buffer.allocUnsafeSlow(capacity).buffer as ArrayBuffer;
  made.add(buffer);
  return Buffer.from(buffer);
}

/**
 * Gives back the buffer under `bytes` when it came from `takeAnswerBuffer` and nothing reads it
 * any more (its answer is written); anything else is left alone.
 */
export function releaseAnswerBuffer(bytes: Uint8Array): void {
  const buffer = bytes.buffer as ArrayBuffer;
  if (!made.has(buffer) || free.includes(buffer) || buffer.byteLength > MAX_KEPT_BYTES) return;
  if (free.length >= KEEP) free.shift();
  free.push(buffer);
}
