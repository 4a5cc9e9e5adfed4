/** A binary heap: `first(a, b)` says whether `a` comes out before `b`, a total order. */
export class Heap<T> {
  #items: T[] = [];
  readonly #first: (a: T, b: T) => boolean;

  constructor(first: (a: T, b: T) => boolean) {
    this.#first = first;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    this.#up(items.length - 1);
  }

  /** Takes the top out. */
  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) this.replaceTop(last!);
    return top;
  }

  /** Puts `item` in the top's place and sifts it down (after the top moved on). */
  replaceTop(item: T): void {
    this.#items[0] = item;
    this.#down(0);
  }

  /** Makes the heap hold `items` (in O(n)). */
  reset(items: T[] = []): void {
    this.#items = items;
    for (let i = (items.length >> 1) - 1; i >= 0; i--) this.#down(i);
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
