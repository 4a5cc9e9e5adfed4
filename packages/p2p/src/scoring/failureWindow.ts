/**
 * Failures per key (an address) within a sliding window: how many of the last `max` happened in
 * the last `windowMs`. At most `capacity` keys are kept; past that the one that failed longest
 * ago is forgotten, so a flood from many addresses cannot grow it without bound.
 */
export class FailureWindow {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #capacity: number;
  /** Times of each key's last failures (at most `max`), oldest first; keys by last failure. */
  readonly #times = new Map<string, number[]>();

  constructor(max: number, windowMs: number, capacity = 10_000) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`failure window max must be an integer of at least 1, got ${max}`);
    if (!Number.isSafeInteger(windowMs) || windowMs < 1)
      throw new RangeError(`failure window must be at least 1 ms, got ${windowMs}`);
    this.#max = max;
    this.#windowMs = windowMs;
    this.#capacity = Math.max(1, capacity);
  }

  /** Counts a failure of `key` at `now`; the failures of `key` within the window, this one included. */
  add(key: string, now: number): number {
    const since = now - this.#windowMs;
    const times = (this.#times.get(key) ?? []).filter((t) => t > since);
    times.push(now);
    if (times.length > this.#max) times.splice(0, times.length - this.#max);
    // Re-inserted, so the map's order is the order of last failures.
    this.#times.delete(key);
    this.#times.set(key, times);
    if (this.#times.size > this.#capacity) {
      const oldest = this.#times.keys().next().value;
      if (oldest !== undefined) this.#times.delete(oldest);
    }
    return times.length;
  }

  /** The failures of `key` within the window ending at `now`. */
  count(key: string, now: number): number {
    const since = now - this.#windowMs;
    return (this.#times.get(key) ?? []).filter((t) => t > since).length;
  }

  /** Forgets `key`'s failures (after a ban, or when it is lifted). */
  clear(key: string): void {
    this.#times.delete(key);
  }

  /** The failures within the window that reach the limit. */
  get max(): number {
    return this.#max;
  }

  /** The keys tracked. */
  get size(): number {
    return this.#times.size;
  }
}
