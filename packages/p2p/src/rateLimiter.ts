/**
 * Token buckets by key (a peer id): each holds up to `capacity` tokens and gains
 * `refillPerSecond` per second; a request takes its cost or is refused whole.
 */
export class RateLimiter {
  readonly #capacity: number;
  readonly #refillPerMs: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    limit: { readonly capacity: number; readonly refillPerSecond: number },
    now: () => number = () => performance.now(),
  ) {
    if (!(limit.capacity > 0) || !(limit.refillPerSecond >= 0))
      throw new RangeError(
        `a rate limit needs a positive capacity and a non-negative refill, got ${limit.capacity} and ${limit.refillPerSecond}`,
      );
    this.#capacity = limit.capacity;
    this.#refillPerMs = limit.refillPerSecond / 1000;
    this.#now = now;
  }

  /** Takes `cost` tokens from `key`'s bucket; false (and nothing taken) when it has fewer. */
  take(key: string, cost: number): boolean {
    const now = this.#now();
    const bucket = this.#buckets.get(key) ?? { tokens: this.#capacity, at: now };
    bucket.tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.at) * this.#refillPerMs);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens < cost) return false;
    bucket.tokens -= cost;
    return true;
  }

  /**
   * How long until `key`'s bucket holds `cost` tokens, in ms: 0 when it does now, `Infinity`
   * when it never will (over the capacity, or no refill). Takes nothing.
   */
  msUntil(key: string, cost: number): number {
    if (cost > this.#capacity) return Number.POSITIVE_INFINITY;
    const bucket = this.#buckets.get(key);
    if (bucket === undefined) return 0;
    const now = this.#now();
    const tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.at) * this.#refillPerMs);
    if (tokens >= cost) return 0;
    return this.#refillPerMs > 0
      ? Math.ceil((cost - tokens) / this.#refillPerMs)
      : Number.POSITIVE_INFINITY;
  }

  /** Forgets `key`: its next request starts from a full bucket. */
  forget(key: string): void {
    this.#buckets.delete(key);
  }

  /**
   * Drops the buckets that have refilled: a full bucket is the same as none. Those still
   * short stay, so a peer cannot reset its bucket by reconnecting.
   */
  prune(): void {
    const now = this.#now();
    for (const [key, bucket] of this.#buckets)
      if (bucket.tokens + (now - bucket.at) * this.#refillPerMs >= this.#capacity)
        this.#buckets.delete(key);
  }

  /** How many buckets are kept. */
  get size(): number {
    return this.#buckets.size;
  }
}
