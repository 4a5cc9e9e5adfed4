export const EMPTY = new Uint8Array(0);
/** Memory beyond this many words costs more than `MAX_CALL_GAS` (3w + w²/512 > 2³²). */
export const MAX_WORDS = 2 ** 21;

/** A small non-negative number from a word, or Infinity when it is beyond any memory. */
export function small(word: bigint): number {
  return word > 0xffffffffn ? Number.POSITIVE_INFINITY : Number(word);
}

export function words(size: number): number {
  return Math.ceil(size / 32);
}

/** Memory buffers of finished frames, zeroed, for the next frames (of any call). */
const POOLED_BYTES = 4096;
const pool: Uint8Array[] = [];

/** A frame's memory and what it has cost so far. */
export class Memory {
  buf: Uint8Array = EMPTY;
  words = 0;
  cost = 0;

  /** Gives the buffer back to the pool once the frame is over (nothing may keep views of it). */
  release(): void {
    const buf = this.buf;
    if (buf.length === POOLED_BYTES && pool.length < 64) {
      buf.fill(0, 0, this.words * 32);
      pool.push(buf);
    }
    this.buf = EMPTY;
  }

  /**
   * The gas to grow memory over `[offset, offset + size)` (nothing when `size` is 0), growing it.
   * Infinity when it cannot be paid with any gas a call has.
   */
  expand(offset: number, size: number, memoryGas: number, quadDiv: number): number {
    if (size === 0) return 0;
    const end = offset + size;
    if (end > MAX_WORDS * 32) return Number.POSITIVE_INFINITY;
    const w = Math.ceil(end / 32);
    if (w <= this.words) return 0;
    const cost = w * memoryGas + Math.floor((w * w) / quadDiv);
    const extra = cost - this.cost;
    this.cost = cost;
    this.words = w;
    if (this.buf.length < w * 32) {
      if (this.buf.length === 0 && w * 32 <= POOLED_BYTES) {
        this.buf = pool.pop() ?? new Uint8Array(POOLED_BYTES);
      } else {
        const buf = new Uint8Array(Math.max(w * 32, this.buf.length * 2));
        buf.set(this.buf);
        this.buf = buf;
      }
    }
    return extra;
  }
}

/** Copies `size` bytes of `source` from `from` (zeros past its end) into `target` at `to`. */
export function copyPadded(
  target: Uint8Array,
  to: number,
  source: Uint8Array,
  from: bigint,
  size: number,
): void {
  if (size === 0) return;
  const start = from > BigInt(source.length) ? source.length : Number(from);
  const available = Math.min(size, source.length - start);
  if (available > 0) target.set(source.subarray(start, start + available), to);
  if (available < size) target.fill(0, to + Math.max(available, 0), to + size);
}
