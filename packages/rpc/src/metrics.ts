import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
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
export class NodeMetrics implements RequestMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<"method" | "key" | "outcome">;
  readonly #latency: Histogram<"method">;
  readonly #rateLimited: Counter<"key">;
  #known: ReadonlySet<string> = new Set();
  /** Label children by `method \0 key \0 code`: prom-client hashes its labels on every call. */
  readonly #counters = new Map<string, Counter.Internal>();
  readonly #histograms = new Map<string, Histogram.Internal<"method">>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "nodex_" });
    // Gauges named as counters, which Prometheus's lint refuses; their labelled kin (by type)
    // stay and sum to the same.
    for (const name of ["active_handles_total", "active_requests_total", "active_resources_total"])
      this.registry.removeSingleMetric(`nodex_nodejs_${name}`);
    this.#requests = new Counter({
      name: "nodex_rpc_requests_total",
      help: "JSON-RPC requests answered or refused, by method, API key id and outcome",
      labelNames: ["method", "key", "outcome"],
      registers: [this.registry],
    });
    this.#latency = new Histogram({
      name: "nodex_rpc_request_duration_seconds",
      help: "Time from reading a JSON-RPC call to its answer, by method",
      labelNames: ["method"],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
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
    this.#count(method, keyId ?? NO_KEY, code);
    let histogram = this.#histograms.get(method);
    if (histogram === undefined) {
      histogram = this.#latency.labels(method);
      this.#histograms.set(method, histogram);
    }
    histogram.observe(seconds);
  }

  rateLimited(keyId: string | undefined, method?: string): void {
    const key = keyId ?? NO_KEY;
    this.#rateLimited.labels(key).inc();
    this.#requests
      .labels(method === undefined ? OTHER_METHOD : this.methodLabel(method), key, "rate_limited")
      .inc();
  }

  unauthorized(): void {
    this.#requests.labels(OTHER_METHOD, NO_KEY, "unauthorized").inc();
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

  #count(method: string, key: string, code: number): void {
    const id = `${method}\0${key}\0${code}`;
    let counter = this.#counters.get(id);
    if (counter === undefined) {
      counter = this.#requests.labels(method, key, outcomeOf(code));
      this.#counters.set(id, counter);
    }
    counter.inc();
  }
}
