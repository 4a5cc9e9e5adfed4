/**
 * Candidates for eviction, cheapest first: a min-heap with lazy deletion. An item stays in the
 * heap after it leaves the pool or changes status; `live` tells the stale ones, which are
 * dropped as they reach the top, and the heap is rebuilt from the live ones when the stale
 * outnumber them. Finding the next victim costs O(log n) rather than a scan of the pool.
 */
export class EvictionQueue<T> {
  #items: T[] = [];
  readonly #first: (a: T, b: T) => boolean;

  /** `first(a, b)`: whether `a` is evicted before `b`, a total order. */
  constructor(first: (a: T, b: T) => boolean) {
    this.#first = first;
  }

  get size(): number {
    return this.#items.length;
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    this.#up(items.length - 1);
  }

  /**
   * The first live item for which `eligible` holds, left in place. Stale items met on the way
   * are dropped; live items passed over are kept.
   */
  find(live: (item: T) => boolean, eligible: (item: T) => boolean): T | undefined {
    const passed: T[] = [];
    let found: T | undefined;
    for (let top = this.#items[0]; top !== undefined; top = this.#items[0]) {
      if (!live(top)) {
        this.#pop();
      } else if (!eligible(top)) {
        passed.push(top);
        this.#pop();
      } else {
        found = top;
        break;
      }
    }
    for (const item of passed) this.push(item);
    return found;
  }

  /** Rebuilds the heap from `items` when it holds more than twice as many (stale ones). */
  compact(liveCount: number, items: () => Iterable<T>): void {
    if (this.#items.length <= 2 * liveCount + 64) return;
    this.#items = [...items()];
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  clear(): void {
    this.#items = [];
  }

  #pop(): void {
    const items = this.#items;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      this.#down(0);
    }
  }

  #up(i: number): void {
    const items = this.#items;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#first(item, items[parent]!)) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.#first(items[r]!, items[l]!) ? r : l;
      if (!this.#first(items[child]!, item)) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = item;
  }
}
