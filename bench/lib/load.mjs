// Load for the benches: autocannon (in this process) against one server, with the bench's own
// response-time record and the CPU the server, the client and everything else used meanwhile.
import { cpuSeconds, machineBusySeconds, mainThreadSeconds } from "./proc.mjs";

let autocannon;

/** Imports autocannon from bench/node_modules (after ensureBenchDeps). */
export async function loadAutocannon() {
  autocannon ??= (await import("autocannon")).default;
  return autocannon;
}

/**
 * Response times in ms as floats. autocannon's own latency histogram has 1 ms resolution, too
 * coarse for sub-millisecond servers, so the bench records each response time itself.
 */
export class Latencies {
  #values = new Float64Array(1 << 20);
  #n = 0;
  push(ms) {
    if (this.#n === this.#values.length) {
      const bigger = new Float64Array(this.#values.length * 2);
      bigger.set(this.#values);
      this.#values = bigger;
    }
    this.#values[this.#n++] = ms;
  }
  summary() {
    const v = this.#values.subarray(0, this.#n).sort();
    const at = (p) =>
      v.length === 0
        ? null
        : v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
    let sum = 0;
    for (const x of v) sum += x;
    return {
      p50: at(50),
      p90: at(90),
      p99: at(99),
      p999: at(99.9),
      max: at(100),
      mean: v.length ? sum / v.length : null,
      count: v.length,
    };
  }
}

/**
 * CPU accounting over a window: `const w = cpuWindow(pid); ...; w.end(operations)` gives the
 * server's CPU (all its threads, and those of `helperPids`: processes that work for it, such as
 * its Redis), this process's CPU (the client) and the rest of the machine's.
 */
export function cpuWindow(pid, helperPids = []) {
  const cpu0 = cpuSeconds(pid);
  const helpers0 = helperPids.map(cpuSeconds);
  const main0 = mainThreadSeconds(pid);
  const busy0 = machineBusySeconds();
  const client0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  return {
    end(operations) {
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu1 = cpuSeconds(pid);
      const main1 = mainThreadSeconds(pid);
      const busy1 = machineBusySeconds();
      const client1 = process.cpuUsage(client0);
      let serverCPU = cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined;
      // A server's helper processes (a Redis the node talks to) count as the server's.
      const helpers1 = helperPids.map(cpuSeconds);
      const helperCPU = helpers0.reduce(
        (sum, c0, i) =>
          c0 === undefined || helpers1[i] === undefined ? sum : sum + (helpers1[i] - c0),
        0,
      );
      if (serverCPU !== undefined) serverCPU += helperCPU;
      const mainCPU = main0 !== undefined && main1 !== undefined ? main1 - main0 : undefined;
      const clientSeconds = (client1.user + client1.system) / 1e6;
      return {
        wall,
        serverCPU:
          serverCPU === undefined
            ? null
            : {
                seconds: serverCPU,
                share: serverCPU / wall,
                usPerRequest: operations > 0 ? (serverCPU / operations) * 1e6 : null,
                // Of which the helper processes' (none unless asked for).
                helperUsPerRequest: operations > 0 ? (helperCPU / operations) * 1e6 : null,
                // Of which the process's first thread (JavaScript, for a Node server); the rest
                // is its other threads (GC and compiler helpers, the database, a runtime's pool).
                mainUsPerRequest:
                  mainCPU !== undefined && operations > 0 ? (mainCPU / operations) * 1e6 : null,
              },
        clientCPU: { seconds: clientSeconds, share: clientSeconds / wall },
        // CPU used by everything else on the machine meanwhile: noise in the figures.
        otherCPU:
          busy0 !== undefined && busy1 !== undefined && serverCPU !== undefined
            ? { share: Math.max(0, busy1 - busy0 - serverCPU - clientSeconds) / wall }
            : null,
      };
    },
  };
}

/**
 * The varying part of a workload whose requests differ (`workload.bodies`): each new request,
 * on whichever connection, takes the next body in turn (`workload.cursor` goes on across the
 * warm-up and the measurement), and a response counts as a mismatch unless it is one of
 * `workload.expected` (a Set of the checked answers).
 */
function varying(workload) {
  if (!workload.bodies) return { body: workload.body };
  workload.cursor ??= 0;
  const { bodies, expected } = workload;
  return {
    requests: [
      {
        method: "POST",
        setupRequest(req) {
          const body = bodies[workload.cursor++ % bodies.length];
          return { ...req, body };
        },
      },
    ],
    ...(expected ? { verifyBody: (b) => expected.has(b) } : {}),
  };
}

/**
 * One autocannon run: `load` is {connections, duration}; `workload.body` is POSTed, or with
 * `workload.bodies` each in turn (see `varying`), to `workload.path` (default `/`).
 */
export function cannon(port, workload, load, expectBody, latencies) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}${workload.path ?? "/"}`,
        method: "POST",
        headers: { "content-type": "application/json" },
        ...varying(workload),
        connections: load.connections,
        pipelining: 1,
        duration: load.duration,
        timeout: 10,
        ...(expectBody !== undefined && !workload.bodies ? { expectBody } : {}),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    if (latencies) instance.on("response", (_client, _status, _bytes, ms) => latencies.push(ms));
  });
}

/**
 * Warm-up, then a measured autocannon run of `workload` ({body, calls}, or {bodies, expected,
 * calls}) against the server `handle` on `port`. `load` is {connections, duration, warmup}
 * (seconds). A response whose body differs from `expectBody` (or is not among `expected`)
 * counts as a mismatch.
 */
export async function measure(handle, port, workload, expectBody, load) {
  if (load.warmup > 0)
    await cannon(
      port,
      workload,
      { connections: load.connections, duration: load.warmup },
      expectBody,
    );
  const latencies = new Latencies();
  const window = cpuWindow(handle.pid, handle.helperPids);
  const r = await cannon(port, workload, load, expectBody, latencies);
  const total = r.requests.total;
  const { serverCPU, clientCPU, otherCPU } = window.end(total);
  return {
    reqPerSec: r.requests.average,
    callsPerSec: r.requests.average * workload.calls,
    latencyMs: latencies.summary(),
    autocannonLatencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: r.latency.mean,
    },
    requests: total,
    ok2xx: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    resets: r.resets ?? 0,
    throughputBytesPerSec: r.throughput.average,
    durationS: r.duration,
    serverCPU,
    clientCPU,
    otherCPU,
  };
}

/**
 * A closed loop for requests too slow for a short autocannon window (an answer that takes a
 * node a second would leave autocannon's window empty): `connections` workers, each on its own
 * keep-alive connection, POST `body` one after another until `duration` seconds have passed
 * (after `warmup` seconds not counted) and at least `minRequests` answers came back; a request
 * in flight at the end is waited for and counted. req/s = answers ÷ time to the last answer.
 * An answer other than `expectBody` counts as a mismatch. Same result fields as `measure`.
 */
export async function measureClosedLoop(handle, port, body, expectBody, load, RPCClient) {
  const { connections, duration, warmup, minRequests = 3 } = load;
  const clients = Array.from({ length: connections }, () => new RPCClient(port));
  const run = async (seconds, latencies, min) => {
    const counts = { requests: 0, non2xx: 0, errors: 0, mismatches: 0, bytes: 0 };
    const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
    const t0 = process.hrtime.bigint();
    await Promise.all(
      clients.map(async (client) => {
        while (process.hrtime.bigint() < end || counts.requests < min) {
          const s = process.hrtime.bigint();
          try {
            const res = await client.raw(body, 120_000);
            latencies?.push(Number(process.hrtime.bigint() - s) / 1e6);
            counts.requests++;
            counts.bytes += Buffer.byteLength(res.text);
            if (res.status < 200 || res.status >= 300) counts.non2xx++;
            else if (res.text !== expectBody) counts.mismatches++;
          } catch {
            counts.errors++;
            if (counts.errors > 10) return;
          }
        }
      }),
    );
    return { ...counts, wall: Number(process.hrtime.bigint() - t0) / 1e9 };
  };
  try {
    if (warmup > 0) await run(warmup, undefined, 0);
    const latencies = new Latencies();
    const window = cpuWindow(handle.pid);
    const r = await run(duration, latencies, minRequests);
    const { serverCPU, clientCPU, otherCPU } = window.end(r.requests);
    return {
      reqPerSec: r.requests / r.wall,
      callsPerSec: r.requests / r.wall,
      latencyMs: latencies.summary(),
      requests: r.requests,
      ok2xx: r.requests - r.non2xx,
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: 0,
      mismatches: r.mismatches,
      resets: 0,
      throughputBytesPerSec: r.bytes / r.wall,
      durationS: r.wall,
      closedLoop: true,
      serverCPU,
      clientCPU,
      otherCPU,
    };
  } finally {
    for (const c of clients) c.close();
  }
}
