import { RPCError, RPCErrorCode } from "./errors.js";
import { type ApiKeyRecord, hashKey, type KeyStore } from "./keys.js";
import {
  DEFAULT_METHOD_WEIGHT,
  DEFAULT_METHOD_WEIGHTS,
  type LimitRefusal,
  type LimitStore,
  type Limits,
} from "./limits.js";
import type { RegisteredMethod } from "./registry.js";

/** JSON-RPC code of a request over a limit (EIP-1474's "limit exceeded"). */
export const LIMIT_EXCEEDED_CODE = -32005;

/** A missing or unknown key: one answer, which tells nothing of the keys there are. */
const UNAUTHORIZED = "unauthorized: the last path segment must be a valid API key";

const DIGEST_CACHE_SIZE = 10_000;

/** Who a hosted request is from. */
export type Principal =
  | { readonly kind: "key"; readonly record: ApiKeyRecord }
  | { readonly kind: "address"; readonly address: string };

/**
 * Why a request was refused before it was read: a 401, or a 503 (-32002) while the shared key
 * registry cannot be read (`unavailable`).
 */
export interface AuthFailure {
  readonly reason: "missing" | "unknown" | "revoked" | "unavailable";
  readonly message: string;
}

export interface HostedAccessOptions {
  readonly keys: KeyStore;
  readonly limits: LimitStore;
  /** Weights that replace the defaults, by method. */
  readonly weights?: Readonly<Record<string, number>>;
  /** What hosted mode turns off that every key holder gets anyway (`--rpc-hosted-allow`). */
  readonly hostedAllow?: readonly string[];
  /**
   * Limits of requests without a key, counted per client address; absent means such requests
   * are refused (401).
   */
  readonly keyless?: Limits;
  readonly now?: () => number;
}

/**
 * Who may call what on a hosted node, and how much: keys looked up by digest on every request
 * (a revoked key is refused at once), per-key allow and deny lists, and units spent against
 * per-key (or per-address) limits.
 */
export class HostedAccess {
  readonly keys: KeyStore;
  readonly limits: LimitStore;
  readonly keyless: Limits | undefined;
  readonly #weights: ReadonlyMap<string, number>;
  readonly #hostedAllow: ReadonlySet<string>;
  readonly #now: () => number;
  /** Digests of the keys seen lately: SHA-256 costs microseconds, a request needs it twice. */
  readonly #digests = new Map<string, string>();

  constructor(opts: HostedAccessOptions) {
    this.keys = opts.keys;
    this.limits = opts.limits;
    this.keyless = opts.keyless;
    this.#weights = new Map(Object.entries({ ...DEFAULT_METHOD_WEIGHTS, ...opts.weights }));
    this.#hostedAllow = new Set(opts.hostedAllow ?? []);
    this.#now = opts.now ?? Date.now;
  }

  /** The units a method costs. */
  weight(method: string): number {
    return this.#weights.get(method) ?? DEFAULT_METHOD_WEIGHT;
  }

  /** The principal of a request from its key (the last path segment) and client address. */
  identify(key: string, remote: string | undefined): Principal | AuthFailure {
    if (key === "") {
      if (this.keyless !== undefined)
        return { kind: "address", address: normalizeAddress(remote ?? "unknown") };
      return { reason: "missing", message: UNAUTHORIZED };
    }
    let digest = this.#digests.get(key);
    if (digest === undefined) {
      // Bounded: unknown keys sent to fill it only make it start over.
      if (this.#digests.size >= DIGEST_CACHE_SIZE) this.#digests.clear();
      digest = hashKey(key);
      this.#digests.set(key, digest);
    }
    const record = this.keys.find(digest);
    if (record === undefined) {
      // Fail closed: a key the shared registry may hold is not let in on a stale copy of it.
      const down = this.keys.unavailable?.();
      if (down !== undefined) return { reason: "unavailable", message: down };
      return { reason: "unknown", message: UNAUTHORIZED };
    }
    if (record.revoked !== undefined)
      return { reason: "revoked", message: "unauthorized: this API key was revoked" };
    return { kind: "key", record };
  }

  /**
   * Whether a principal of a WebSocket connection may still send: `undefined` when its key was
   * revoked since, an `AuthFailure` (`unavailable`) while the shared registry cannot be read.
   */
  stillValid(principal: Principal): Principal | AuthFailure | undefined {
    if (principal.kind === "address") return principal;
    const now = this.keys.find(principal.record.sha256);
    if (now === undefined) {
      const down = this.keys.unavailable?.();
      if (down !== undefined) return { reason: "unavailable", message: down };
    }
    return now === undefined || now.revoked !== undefined
      ? undefined
      : { kind: "key", record: now };
  }

  /** A guard for one HTTP request or WebSocket message of `principal`. */
  guard(principal: Principal): RequestGuard {
    return new RequestGuard(this, principal);
  }

  /** Whether hosted mode's off switch is lifted for `method` (node-wide or for the key). */
  liftedFor(method: RegisteredMethod, policy: ApiKeyRecord | undefined): boolean {
    return (
      this.#hostedAllow.has(method.module) ||
      this.#hostedAllow.has(method.name) ||
      (policy?.allow?.includes(method.module) ?? false) ||
      (policy?.allow?.includes(method.name) ?? false)
    );
  }

  now(): number {
    return this.#now();
  }
}

/** Scope of a key's counters in the `LimitStore`. */
export function keyScope(id: string): string {
  return `key:${id}`;
}

function normalizeAddress(address: string): string {
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/**
 * Decides, member by member, whether the methods of one request run: the key's lists, then
 * its limits. Remembers what it refused for a limit, for the HTTP status and `Retry-After`.
 */
export class RequestGuard {
  readonly principal: Principal;
  /** Members refused for a limit. */
  limited = 0;
  /** Members let through. */
  admitted = 0;
  /** The longest wait of the refusals, in seconds. */
  retryAfterS = 0;
  readonly #access: HostedAccess;

  constructor(access: HostedAccess, principal: Principal) {
    this.#access = access;
    this.principal = principal;
  }

  get keyId(): string | undefined {
    return this.principal.kind === "key" ? this.principal.record.id : undefined;
  }

  /** `undefined`: the method runs (its units are spent); else the error it is answered with. */
  admit(method: RegisteredMethod): RPCError | undefined {
    const record = this.principal.kind === "key" ? this.principal.record : undefined;
    if (method.hostedOff !== undefined && !this.#access.liftedFor(method, record))
      return method.hostedOff;
    if (record !== undefined) {
      const { methods, deny } = record;
      if (
        (methods !== undefined &&
          !methods.includes(method.name) &&
          !methods.includes(method.module)) ||
        (deny !== undefined && (deny.includes(method.name) || deny.includes(method.module)))
      ) {
        return new RPCError(
          RPCErrorCode.METHOD_NOT_FOUND,
          `the method ${method.name} is not available: it is not allowed for this API key`,
        );
      }
    }
    const cost = this.#access.weight(method.name);
    const limits: Limits = record ?? this.#access.keyless ?? {};
    const scope =
      this.principal.kind === "key"
        ? keyScope(this.principal.record.id)
        : `ip:${this.principal.address}`;
    const refused = this.#access.limits.take(scope, cost, limits, this.#access.now());
    if (refused === undefined) {
      this.admitted++;
      return undefined;
    }
    this.limited++;
    this.retryAfterS = Math.max(this.retryAfterS, refused.retryAfterS);
    return limitError(
      refused,
      limits,
      this.principal.kind === "key" ? "API key" : "client address",
      method.name,
      cost,
    );
  }
}

function limitError(
  refused: LimitRefusal,
  limits: Limits,
  who: string,
  method: string,
  cost: number,
): RPCError {
  const what =
    refused.limit === "rate"
      ? `the rate limit of ${limits.rate} units per second of this ${who}`
      : `the daily quota of ${limits.daily} units of this ${who} (UTC day)`;
  const when =
    refused.limit === "rate"
      ? `retry in ${refused.retryAfterS} s`
      : `it frees at 00:00 UTC, in ${refused.retryAfterS} s`;
  return new RPCError(
    LIMIT_EXCEEDED_CODE,
    `limit exceeded: ${what}; ${method} costs ${cost} units; ${when}`,
  );
}
