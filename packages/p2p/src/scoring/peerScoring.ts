import { type AddressBlock, AddressSet, normalizeAddress, parseAddressBlock } from "./addresses.js";

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

  /** Ends an expired punishment: the reputation comes back, the counters start anew. */
  expire(now: number): void {
    if (this.punishedUntil === 0 || this.punishedUntil > now) return;
    this.punishedUntil = 0;
    this.goodReputation = true;
    this.counters.clear();
    this.score = 0;
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
  /** Addresses punished for bad reputation, until when, and how often so far. */
  readonly punished: readonly {
    readonly address: string;
    readonly until: number;
    readonly punishments: number;
  }[];
}

export interface PeerScoringOptions {
  readonly nodes?: PunishmentParams;
  readonly addresses?: PunishmentParams;
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

/**
 * Peer scoring as the reference node does it: each event is counted for the peer's node id and
 * for its address. An invalid block, transaction, message, header or network resets a positive
 * score to 0 and subtracts 1; a valid block or transaction adds 1 while the score is not
 * negative; handshakes, repeats, unexpected messages and timeouts are counted only. After an
 * invalid block, message or header the peer's reputation is bad: it is punished (disconnected,
 * its address refused) for 12 minutes, 10 % longer each repeat; when the punishment ends its
 * record starts anew. Addresses banned by hand (`sco_banAddress`) stay banned until unbanned.
 */
export class PeerScoring {
  readonly #nodes = new Map<string, Record>();
  readonly #addresses = new Map<string, Record>();
  readonly #manual = new AddressSet();
  readonly #nodeParams: PunishmentParams;
  readonly #addressParams: PunishmentParams;
  readonly #now: () => number;
  readonly #onBansChanged: ((state: BanState) => void) | undefined;

  constructor(opts: PeerScoringOptions = {}, state?: BanState) {
    this.#nodeParams = opts.nodes ?? NODE_PUNISHMENT;
    this.#addressParams = opts.addresses ?? ADDRESS_PUNISHMENT;
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

  /** `sco_unbanAddress`: `false` when `text` is not an address or CIDR block. */
  unban(text: string): boolean {
    const block = parseAddressBlock(text);
    if (block === undefined) return false;
    if (this.#manual.delete(block)) this.#changed();
    return true;
  }

  /** `sco_bannedAddresses`: the addresses banned by hand, single ones first. */
  bannedAddresses(): string[] {
    return this.#manual.list();
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
        punished.push({ address, until: r.punishedUntil, punishments: r.punishments });
    }
    return { manual: this.bannedAddresses(), punished };
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

  /** Punishes a record whose reputation turned bad; the end of its punishment, or 0. */
  #punishIfBad(r: Record, params: PunishmentParams, now: number): number {
    if (r.goodReputation) return 0;
    if (r.punishedUntil > now) return r.punishedUntil;
    r.punishedUntil = now + punishmentDuration(params, r.punishments);
    r.punishments++;
    return r.punishedUntil;
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
      this.#addresses.set(normalizeAddress(p.address), r);
    }
  }

  #changed(): void {
    this.#onBansChanged?.(this.banState());
  }
}
