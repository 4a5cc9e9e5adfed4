/**
 * A token bucket of `rps` tokens a second holding at most `burst` tokens, kept as the time the
 * next token is due (the generic cell rate algorithm): no timer, no refill loop. `reserve`
 * takes a token now or books the next free one, so that callers served one after another get
 * their tokens in the order they asked.
 */
export class RateBudget {
  /** Milliseconds between two tokens (0: no budget). */
  readonly #interval: number;
  /** How far ahead of `#due` a token may be taken: the burst beyond the first token. */
  readonly #tolerance: number;
  /** When the bucket is empty again if no more tokens are taken (theoretical arrival time). */
  #due = Number.NEGATIVE_INFINITY;

  constructor(rps: number, burst: number) {
    this.#interval = Number.isFinite(rps) ? 1000 / rps : 0;
    this.#tolerance = (burst - 1) * this.#interval;
  }

  /** Takes one token; answers how many milliseconds after `now` it may be used (0: at once). */
  reserve(now: number): number {
    if (this.#interval === 0) return 0;
    const at = Math.max(now, this.#due - this.#tolerance);
    this.#due = Math.max(this.#due, at) + this.#interval;
    return at - now;
  }
}
