import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { OTHER_METHOD } from "./registry.js";

/** The key label of a request that came without an API key (local mode, or refused for it). */
export const NO_KEY = "none";

/**
 * What the request path tells the metrics. The dispatcher reports every call it answers; the
 * HTTP layer the requests it refuses for their API key; a limiter the requests it refuses.
 */
export interface RequestMetrics {
  /**
   * One JSON-RPC call answered (notifications too): its method label (`methodLabel`), the key
   * id it came with, the JSON-RPC error code of its answer (0 for a result) and how long it took.
   */
  call(method: string, keyId: string | undefined, code: number, seconds: number): void;
  /**
   * A request refused by a rate limit before its method ran: counted in
   * `nodex_rpc_requests_total` as `rate_limited` and in `nodex_rpc_rate_limited_total`, and
   * not counted again as a call. `method` is the method's name when known (folded to
   * `other` when the node does not declare it); absent when the body was not read.
   */
  rateLimited(keyId: string | undefined, method?: string): void;
  /** A request (or WebSocket upgrade) refused for its API key: missing or wrong. */
  unauthorized(): void;
  /**
   * A call counted with code `from` whose answer became `to` (an answer over the response size
   * limit, replaced by -32011): moved from one count to the other.
   */
  recount?(method: string, keyId: string | undefined, from: number, to: number): void;
  /** The label of a method name: the name when the node declares the method, else `other`. */
  methodLabel(name: string): string;
}

/** A value read when Prometheus scrapes: `undefined` leaves the series out of that scrape. */
export type GaugeReader = () => number | undefined | Promise<number | undefined>;

/** Seconds: from a tenth of a millisecond (a cached read) to half a minute (a heavy trace). */
const LATENCY_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  30,
];

/** The outcome label of an answer's JSON-RPC error code: a class, so that the values are few. */
export function outcomeOf(code: number): string {
  switch (code) {
    case 0:
      return "ok";
    case -32700:
      return "parse_error";
    case -32600:
      return "invalid_request";
    case -32601:
      return "method_not_found";
    case -32602:
      return "invalid_params";
    case -32603:
      return "internal_error";
    case 3:
    case -32015:
      return "reverted";
    case -32010:
      return "transaction_rejected";
    case -32005:
    case -32011:
    case -32012:
      return "limit_exceeded";
    case -32002:
      return "resource_unavailable";
    default:
      return code <= -32000 && code >= -32099 ? "server_error" : "other_error";
  }
}

/**
 * The node's metrics, in Prometheus's text format (prom-client): the JSON-RPC requests, the
 * gauges the rest of the node registers (`gauge`), and the process's own (event-loop lag,
 * heap, garbage collection, file descriptors). Method labels are bounded: names the node does
 * not declare fold into `other`, so a client cannot make new series.
 */
/** One method's figures: its counts by key and code, its latency histogram. */
interface MethodFigures {
  readonly byKey: Map<string, Map<number, { n: number }>>;
  /** Observations at or under each bound of `LATENCY_BUCKETS` (not cumulative), then above. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * The node's metrics, in Prometheus's text format (prom-client): the JSON-RPC requests, the
 * gauges the rest of the node registers (`gauge`), and the process's own (event-loop lag,
 * heap, garbage collection, file descriptors). Method labels are bounded: names the node does
 * not declare fold into `other`, so a client cannot make new series.
 *
 * The request counts and latencies are plain numbers kept here, turned into samples when
 * Prometheus scrapes: prom-client's own counters and histograms hash their labels on every
 * call, which would cost each request more than the rest of its accounting.
 */
export class NodeMetrics implements RequestMetrics {
  readonly registry = new Registry();
  readonly #rateLimited: Counter<"key">;
  #known: ReadonlySet<string> = new Set();
  readonly #methods = new Map<string, MethodFigures>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "nodex_" });
    // Gauges named as counters, which Prometheus's lint refuses; their labelled kin (by type)
    // stay and sum to the same.
    for (const name of ["active_handles_total", "active_requests_total", "active_resources_total"])
      this.registry.removeSingleMetric(`nodex_nodejs_${name}`);
    this.#register(
      "nodex_rpc_requests_total",
      "JSON-RPC requests answered or refused, by method, API key id and outcome",
      "counter",
      () => this.#requestSamples(),
    );
    this.#register(
      "nodex_rpc_request_duration_seconds",
      "Time from reading a JSON-RPC call to its answer, by method",
      "histogram",
      () => this.#latencySamples(),
    );
    this.#rateLimited = new Counter({
      name: "nodex_rpc_rate_limited_total",
      help: "JSON-RPC requests refused by a rate limit, by API key id",
      labelNames: ["key"],
      registers: [this.registry],
    });
  }

  /** The method names the node declares (served or not); others are counted as `other`. */
  setKnownMethods(names: Iterable<string>): void {
    this.#known = new Set(names);
  }

  methodLabel(name: string): string {
    return this.#known.has(name) ? name : OTHER_METHOD;
  }

  call(method: string, keyId: string | undefined, code: number, seconds: number): void {
    const figures = this.#count(method, keyId ?? NO_KEY, code);
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    figures.buckets[i]! += 1;
    figures.sum += seconds;
    figures.count++;
  }

  rateLimited(keyId: string | undefined, method?: string): void {
    const key = keyId ?? NO_KEY;
    this.#rateLimited.labels(key).inc();
    this.#count(method === undefined ? OTHER_METHOD : this.methodLabel(method), key, RATE_LIMITED);
  }

  unauthorized(): void {
    this.#count(OTHER_METHOD, NO_KEY, UNAUTHORIZED);
  }

  recount(method: string, keyId: string | undefined, from: number, to: number): void {
    const key = keyId ?? NO_KEY;
    const counter = this.#methods.get(method)?.byKey.get(key)?.get(from);
    if (counter !== undefined && counter.n > 0) counter.n--;
    this.#count(method, key, to);
  }

  /** A gauge read at each scrape. */
  gauge(name: string, help: string, read: GaugeReader): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const value = await read();
        if (value === undefined) this.reset();
        else this.set(value);
      },
    });
  }

  /** A gauge with one series per label value, read at each scrape. */
  labelledGauge(
    name: string,
    help: string,
    label: string,
    read: () => Readonly<Record<string, number>> | Promise<Readonly<Record<string, number>>>,
  ): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      async collect() {
        const values = await read();
        this.reset();
        for (const [value, n] of Object.entries(values)) this.labels(value).set(n);
      },
    });
  }

  /** The text Prometheus scrapes. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  #count(method: string, key: string, code: number): MethodFigures {
    let figures = this.#methods.get(method);
    if (figures === undefined) {
      figures = {
        byKey: new Map(),
        buckets: new Float64Array(LATENCY_BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      this.#methods.set(method, figures);
    }
    let codes = figures.byKey.get(key);
    if (codes === undefined) {
      codes = new Map();
      figures.byKey.set(key, codes);
    }
    const counter = codes.get(code);
    if (counter === undefined) codes.set(code, { n: 1 });
    else counter.n++;
    return figures;
  }

  #requestSamples(): Sample[] {
    // Codes of one class add up into one series.
    const totals = new Map<string, Sample>();
    for (const [method, figures] of this.#methods) {
      for (const [key, codes] of figures.byKey) {
        for (const [code, { n }] of codes) {
          const outcome = outcomeLabel(code);
          const id = `${method}\0${key}\0${outcome}`;
          const sample = totals.get(id);
          if (sample === undefined) totals.set(id, { labels: { method, key, outcome }, value: n });
          else sample.value += n;
        }
      }
    }
    return [...totals.values()];
  }

  #latencySamples(): Sample[] {
    const samples: Sample[] = [];
    const name = "nodex_rpc_request_duration_seconds";
    for (const [method, figures] of this.#methods) {
      if (figures.count === 0) continue;
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += figures.buckets[i]!;
        samples.push({ metricName: `${name}_bucket`, labels: { le, method }, value: cumulative });
      });
      samples.push({
        metricName: `${name}_bucket`,
        labels: { le: "+Inf", method },
        value: figures.count,
      });
      samples.push({ metricName: `${name}_sum`, labels: { method }, value: figures.sum });
      samples.push({ metricName: `${name}_count`, labels: { method }, value: figures.count });
    }
    return samples;
  }

  /** A metric whose samples are made at each scrape by `values`. */
  #register(
    name: string,
    help: string,
    type: "counter" | "histogram",
    values: () => Sample[],
  ): void {
    const metric = {
      name,
      help,
      type,
      aggregator: "sum",
      get: () => Promise.resolve({ name, help, type, aggregator: "sum", values: values() }),
      reset: () => {},
    };
    this.registry.registerMetric(metric as unknown as Parameters<Registry["registerMetric"]>[0]);
  }
}

/** Refusals before a method ran, kept among the codes under values no JSON-RPC code takes. */
const RATE_LIMITED = Number.MIN_SAFE_INTEGER;
const UNAUTHORIZED = Number.MIN_SAFE_INTEGER + 1;

function outcomeLabel(code: number): string {
  if (code === RATE_LIMITED) return "rate_limited";
  if (code === UNAUTHORIZED) return "unauthorized";
  return outcomeOf(code);
}
