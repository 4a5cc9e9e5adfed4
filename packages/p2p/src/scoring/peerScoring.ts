import { type AddressBlock, AddressSet, normalizeAddress, parseAddressBlock } from "./addresses.js";
import { FailureWindow } from "./failureWindow.js";

/** What a peer did, as the reference node's scoring counts it. */
export const PeerEvent = {
  SUCCESSFUL_HANDSHAKE: "successfulHandshakes",
  FAILED_HANDSHAKE: "failedHandshakes",
  INVALID_NETWORK: "invalidNetworks",
  REPEATED_MESSAGE: "repeatedMessages",
  VALID_BLOCK: "validBlocks",
  VALID_TRANSACTION: "validTransactions",
  INVALID_BLOCK: "invalidBlocks",
  INVALID_TRANSACTION: "invalidTransactions",
  INVALID_MESSAGE: "invalidMessages",
  UNEXPECTED_MESSAGE: "unexpectedMessages",
  TIMEOUT_MESSAGE: "timeoutMessages",
  INVALID_HEADER: "invalidHeader",
} as const;
export type PeerEvent = (typeof PeerEvent)[keyof typeof PeerEvent];

const COUNTERS: readonly PeerEvent[] = Object.values(PeerEvent);

/** Events that reset a positive score to 0 and then subtract 1. */
const PENALIZING = new Set<PeerEvent>([
  PeerEvent.INVALID_NETWORK,
  PeerEvent.INVALID_BLOCK,
  PeerEvent.INVALID_TRANSACTION,
  PeerEvent.INVALID_MESSAGE,
  PeerEvent.INVALID_HEADER,
]);
/** Events that leave the score as it is. */
const NEUTRAL = new Set<PeerEvent>([
  PeerEvent.SUCCESSFUL_HANDSHAKE,
  PeerEvent.FAILED_HANDSHAKE,
  PeerEvent.REPEATED_MESSAGE,
  PeerEvent.UNEXPECTED_MESSAGE,
  PeerEvent.TIMEOUT_MESSAGE,
]);
/** Events after which a peer no longer has a good reputation. */
const DISQUALIFYING = new Set<PeerEvent>([
  PeerEvent.INVALID_BLOCK,
  PeerEvent.INVALID_MESSAGE,
  PeerEvent.INVALID_HEADER,
]);

/** How long a punishment lasts: `durationMs` at first, `incrementPercent` longer each repeat. */
export interface PunishmentParams {
  readonly durationMs: number;
  readonly incrementPercent: number;
  /** 0: no maximum. */
  readonly maxDurationMs: number;
}

/** The reference node's defaults: 12 minutes, +10 %; addresses at most 6,000 minutes. */
export const NODE_PUNISHMENT: PunishmentParams = {
  durationMs: 12 * 60_000,
  incrementPercent: 10,
  maxDurationMs: 0,
};
export const ADDRESS_PUNISHMENT: PunishmentParams = {
  durationMs: 12 * 60_000,
  incrementPercent: 10,
  maxDurationMs: 6000 * 60_000,
};

/**
 * When failed inbound connections ban an address: `max` failures within `windowMs`. A failed
 * connection is one that never became a peer: bytes that are not the protocol, an encryption or
 * multiplexer negotiation that fails, silence past the handshake's time, or a close before the
 * status handshake.
 */
export interface FailedConnectionLimit {
  readonly max: number;
  readonly windowMs: number;
}

/**
 * The most address records kept for failed connections: past it, records of addresses that are
 * not punished are forgotten, oldest first, so connections from many addresses cannot grow the
 * records without bound.
 */
export const MAX_ADDRESS_RECORDS = 10_000;

/** Ten failed connections within a minute. */
export const FAILED_CONNECTION_LIMIT: FailedConnectionLimit = { max: 10, windowMs: 60_000 };

export function punishmentDuration(params: PunishmentParams, previous: number): number {
  const duration = params.durationMs * (1 + params.incrementPercent / 100) ** previous;
  const capped = params.maxDurationMs > 0 ? Math.min(duration, params.maxDurationMs) : duration;
  return Math.round(capped);
}

/** One peer's record, by node id or by address. */
class Record {
  readonly counters = new Map<PeerEvent, number>();
  score = 0;
  goodReputation = true;
  punishments = 0;
  /** Milliseconds since the epoch; 0 when not punished. */
  punishedUntil = 0;
  /** Whether the running punishment is a ban for failed connections (addresses only). */
  connectionBan = false;

  record(event: PeerEvent): void {
    this.counters.set(event, (this.counters.get(event) ?? 0) + 1);
    if (PENALIZING.has(event)) {
      if (this.score > 0) this.score = 0;
      this.score--;
    } else if (!NEUTRAL.has(event) && this.score >= 0) {
      this.score++;
    }
    if (DISQUALIFYING.has(event)) this.goodReputation = false;
  }

  /**
   * A connection from this address that never became a peer: counted as a failed handshake,
   * and scored as an invalid event (a positive score to 0, then 1 less). The reputation is
   * left to the failure window: one failure does not ban.
   */
  failedConnection(): void {
    const counter = PeerEvent.FAILED_HANDSHAKE;
    this.counters.set(counter, (this.counters.get(counter) ?? 0) + 1);
    if (this.score > 0) this.score = 0;
    this.score--;
  }

  /** Ends the punishment now (a ban lifted by the operator); the record starts anew. */
  lift(): void {
    this.punishedUntil = 0;
    this.connectionBan = false;
    this.goodReputation = true;
    this.counters.clear();
    this.score = 0;
  }

  /** Ends an expired punishment: the reputation comes back, the counters start anew. */
  expire(now: number): void {
    if (this.punishedUntil === 0 || this.punishedUntil > now) return;
    this.lift();
  }

  json(id: string, type: "node" | "address"): Record_ {
    const out: Record_ = { id, type, goodReputation: this.goodReputation };
    for (const counter of COUNTERS) out[counter] = this.counters.get(counter) ?? 0;
    out.score = this.score;
    out.punishments = this.punishments;
    out.punishedUntil = this.punishedUntil;
    return out;
  }
}
type Record_ = { [key: string]: string | number | boolean };

/** What the ban list keeps across restarts. */
export interface BanState {
  /** `sco_banAddress` entries: addresses and CIDR blocks, banned until unbanned. */
  readonly manual: readonly string[];
  /**
   * Addresses punished, until when, and how often so far; `reason` `"connections"` for a ban
   * for failed connections (absent: a peer's bad reputation).
   */
  readonly punished: readonly {
    readonly address: string;
    readonly until: number;
    readonly punishments: number;
    readonly reason?: "connections";
  }[];
}

export interface PeerScoringOptions {
  readonly nodes?: PunishmentParams;
  readonly addresses?: PunishmentParams;
  /** When failed inbound connections ban an address; default `FAILED_CONNECTION_LIMIT`. */
  readonly failedConnections?: FailedConnectionLimit;
  readonly now?: () => number;
  /** Called with the ban state whenever it changes (to persist it). */
  readonly onBansChanged?: (state: BanState) => void;
}

/** The outcome of an event: whether the peer must now be disconnected and banned. */
export interface ScoreOutcome {
  readonly punished: boolean;
  /** When the punishment ends (ms since the epoch), when punished. */
  readonly until?: number;
  /** Whether this event started the punishment (not one already running). */
  readonly started?: boolean;
}

/** The outcome of a failed connection: a `ScoreOutcome` and the failures in the window. */
export interface FailedConnectionOutcome extends ScoreOutcome {
  /** The address's failed connections within the window, this one included. */
  readonly failures: number;
}

/**
 * Peer scoring as the reference node does it: each event is counted for the peer's node id and
 * for its address. An invalid block, transaction, message, header or network resets a positive
 * score to 0 and subtracts 1; a valid block or transaction adds 1 while the score is not
 * negative; handshakes, repeats, unexpected messages and timeouts are counted only. After an
 * invalid block, message or header the peer's reputation is bad: it is punished (disconnected,
 * its address refused) for 12 minutes, 10 % longer each repeat; when the punishment ends its
 * record starts anew. Addresses banned by hand (`sco_banAddress`) stay banned until unbanned.
 * Below the peer identity, an address whose inbound connections fail `failedConnections.max`
 * times within `failedConnections.windowMs` is banned for the address punishment's time; such a
 * ban is listed by `bannedAddresses` and lifted by `unban`.
 */
export class PeerScoring {
  readonly #nodes = new Map<string, Record>();
  readonly #addresses = new Map<string, Record>();
  readonly #manual = new AddressSet();
  readonly #nodeParams: PunishmentParams;
  readonly #addressParams: PunishmentParams;
  readonly #failures: FailureWindow;
  readonly #now: () => number;
  readonly #onBansChanged: ((state: BanState) => void) | undefined;

  constructor(opts: PeerScoringOptions = {}, state?: BanState) {
    this.#nodeParams = opts.nodes ?? NODE_PUNISHMENT;
    this.#addressParams = opts.addresses ?? ADDRESS_PUNISHMENT;
    const limit = opts.failedConnections ?? FAILED_CONNECTION_LIMIT;
    this.#failures = new FailureWindow(limit.max, limit.windowMs);
    this.#now = opts.now ?? Date.now;
    this.#onBansChanged = opts.onBansChanged;
    if (state !== undefined) this.#restore(state);
  }

  /** Counts `event` for the peer; says whether it must now be disconnected. */
  record(nodeId: string | undefined, address: string | undefined, event: PeerEvent): ScoreOutcome {
    const now = this.#now();
    let until = 0;
    let started = false;
    if (nodeId !== undefined) {
      const r = this.#record(this.#nodes, nodeId, now);
      r.record(event);
      const before = r.punishedUntil;
      until = Math.max(until, this.#punishIfBad(r, this.#nodeParams, now));
      started ||= r.punishedUntil !== before;
    }
    let addressPunished = false;
    if (address !== undefined) {
      const r = this.#record(this.#addresses, normalizeAddress(address), now);
      r.record(event);
      const before = r.punishedUntil;
      until = Math.max(until, this.#punishIfBad(r, this.#addressParams, now));
      addressPunished = r.punishedUntil !== before;
    }
    if (addressPunished) this.#changed();
    return until > now
      ? { punished: true, until, started: started || addressPunished }
      : { punished: false };
  }

  /**
   * Counts an inbound connection from `address` that never became a peer. At the limit's
   * failures within its window the address is banned (`started`), for 12 minutes at first and
   * 10 % longer each repeat, at most 6,000 minutes (the address punishment's rules).
   */
  failedConnection(address: string): FailedConnectionOutcome {
    const now = this.#now();
    const key = normalizeAddress(address);
    if (!this.#addresses.has(key)) this.#trimAddresses(now);
    const r = this.#record(this.#addresses, key, now);
    r.failedConnection();
    if (r.punishedUntil > now)
      return { punished: true, until: r.punishedUntil, started: false, failures: 0 };
    const failures = this.#failures.add(key, now);
    if (failures < this.#failures.max) return { punished: false, failures };
    this.#failures.clear(key);
    r.goodReputation = false;
    r.connectionBan = true;
    r.punishedUntil = now + punishmentDuration(this.#addressParams, r.punishments);
    r.punishments++;
    this.#changed();
    return { punished: true, until: r.punishedUntil, started: true, failures };
  }

  /** Whether a peer may stay connected: neither its node id nor its address is punished. */
  hasGoodReputation(nodeId: string | undefined, address: string | undefined): boolean {
    const now = this.#now();
    const node = nodeId === undefined ? undefined : this.#nodes.get(nodeId);
    node?.expire(now);
    const addr = address === undefined ? undefined : this.#addresses.get(normalizeAddress(address));
    addr?.expire(now);
    return (node?.punishedUntil ?? 0) === 0 && (addr?.punishedUntil ?? 0) === 0;
  }

  /** Whether connections from or to `address` are refused (banned by hand or punished). */
  isBanned(address: string): boolean {
    const normalized = normalizeAddress(address);
    if (this.#manual.has(normalized)) return true;
    const r = this.#addresses.get(normalized);
    if (r === undefined || r.punishedUntil === 0) return false;
    r.expire(this.#now());
    return r.punishedUntil !== 0;
  }

  /** `sco_banAddress`: `false` when `text` is not an address or CIDR block. */
  ban(text: string): boolean {
    const block = parseAddressBlock(text);
    if (block === undefined) return false;
    if (this.#manual.add(block)) this.#changed();
    return true;
  }

  /**
   * `sco_unbanAddress`: lifts a ban by hand, or a running ban of a single address for failed
   * connections; `false` when `text` is not an address or CIDR block.
   */
  unban(text: string): boolean {
    const block = parseAddressBlock(text);
    if (block === undefined) return false;
    let changed = this.#manual.delete(block);
    if (block.prefix === undefined) {
      const r = this.#addresses.get(block.address);
      if (r?.connectionBan === true && r.punishedUntil > 0) {
        r.lift();
        this.#failures.clear(block.address);
        changed = true;
      }
    }
    if (changed) this.#changed();
    return true;
  }

  /**
   * `sco_bannedAddresses`: single addresses banned by hand, then those banned for failed
   * connections (while the ban runs), then blocks banned by hand.
   */
  bannedAddresses(): string[] {
    const manual = this.#manual.list();
    const singles = manual.filter((text) => !text.includes("/"));
    const blocks = manual.filter((text) => text.includes("/"));
    const now = this.#now();
    const refused: string[] = [];
    for (const [address, r] of this.#addresses) {
      if (!r.connectionBan) continue;
      r.expire(now);
      if (r.connectionBan && !singles.includes(address)) refused.push(address);
    }
    return [...singles, ...refused, ...blocks];
  }

  /** `sco_peerList`: node records (by short id) first, then address records. */
  peerList(shortId: (nodeId: string) => string = (id) => id.slice(0, 8)): Record_[] {
    const now = this.#now();
    const out: Record_[] = [];
    for (const [id, r] of this.#nodes) {
      r.expire(now);
      out.push(r.json(shortId(id), "node"));
    }
    for (const [address, r] of this.#addresses) {
      r.expire(now);
      out.push(r.json(address, "address"));
    }
    return out;
  }

  /** `sco_reputationSummary`: the counters summed over node records. */
  summary(): Record_ {
    const now = this.#now();
    const out: Record_ = { count: this.#nodes.size };
    for (const counter of COUNTERS) out[counter] = 0;
    let total = 0;
    let punishments = 0;
    let good = 0;
    for (const r of this.#nodes.values()) {
      r.expire(now);
      for (const counter of COUNTERS)
        out[counter] = (out[counter] as number) + (r.counters.get(counter) ?? 0);
      total += r.score;
      punishments += r.punishments;
      if (r.goodReputation) good++;
    }
    out.peersTotalScore = total;
    out.punishments = punishments;
    out.goodReputationCount = good;
    out.badReputationCount = this.#nodes.size - good;
    return out;
  }

  /** The state to persist. */
  banState(): BanState {
    const now = this.#now();
    const punished: BanState["punished"][number][] = [];
    for (const [address, r] of this.#addresses) {
      if (r.punishedUntil > now)
        punished.push({
          address,
          until: r.punishedUntil,
          punishments: r.punishments,
          ...(r.connectionBan ? { reason: "connections" as const } : {}),
        });
    }
    return { manual: this.#manual.list(), punished };
  }

  #record(map: Map<string, Record>, key: string, now: number): Record {
    let r = map.get(key);
    if (r === undefined) {
      r = new Record();
      map.set(key, r);
    }
    r.expire(now);
    return r;
  }

  /** Makes room for one more address record: forgets unpunished ones, oldest first. */
  #trimAddresses(now: number): void {
    if (this.#addresses.size < MAX_ADDRESS_RECORDS) return;
    for (const [address, r] of this.#addresses) {
      if (this.#addresses.size < MAX_ADDRESS_RECORDS) return;
      r.expire(now);
      if (r.punishedUntil === 0) this.#addresses.delete(address);
    }
  }

  /** Punishes a record whose reputation turned bad; the end of its punishment, or 0. */
  #punishIfBad(r: Record, params: PunishmentParams, now: number): number {
    if (r.goodReputation) return 0;
    if (r.punishedUntil > now) return r.punishedUntil;
    r.punishedUntil = now + punishmentDuration(params, r.punishments);
    r.punishments++;
    return r.punishedUntil;
  }

  /**
   * Replaces every ban with `state` (the ban list read again, as after an operator edited it):
   * bans by hand and punished addresses alike. Scores and counters stay.
   */
  reloadBans(state: BanState): void {
    for (const text of this.#manual.list()) {
      const block = parseAddressBlock(text);
      if (block !== undefined) this.#manual.delete(block);
    }
    for (const r of this.#addresses.values()) {
      r.punishedUntil = 0;
      r.connectionBan = false;
    }
    this.#restore(state);
  }

  #restore(state: BanState): void {
    for (const text of state.manual) {
      const block: AddressBlock | undefined = parseAddressBlock(text);
      if (block !== undefined) this.#manual.add(block);
    }
    const now = this.#now();
    for (const p of state.punished) {
      if (p.until <= now || parseAddressBlock(p.address) === undefined) continue;
      const r = new Record();
      r.goodReputation = false;
      r.punishedUntil = p.until;
      r.punishments = p.punishments;
      r.connectionBan = p.reason === "connections";
      this.#addresses.set(normalizeAddress(p.address), r);
    }
  }

  #changed(): void {
    this.#onBansChanged?.(this.banState());
  }
}
