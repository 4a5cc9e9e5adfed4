import { spawn, spawnSync } from "node:child_process";
import type { RunningNode } from "./node.js";
import { until } from "./p2p.js";

/** The base URL of the node's metrics listener, from its start-up log (it starts after RPC). */
export function metricsUrl(node: RunningNode): Promise<string> {
  return until("the Metrics listening line", async () => {
    const line = node
      .logs()
      .split("\n")
      .find((l) => l.includes('"msg":"Metrics listening"') && l.endsWith("}"));
    if (line === undefined) return undefined;
    return (JSON.parse(line) as { url: string }).url.replace(/\/metrics$/, "");
  });
}

/**
 * Prometheus's `promtool`: `.ci/run` installs it (Debian's prometheus package). Elsewhere a
 * missing promtool fails the test with how to install it, rather than skipping the check.
 */
export function requirePromtool(): string {
  const found = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  if (found.error !== undefined || found.status !== 0) {
    throw new Error(
      "promtool (Prometheus's own checker) is not installed: `apt-get install prometheus` on Debian or Ubuntu (.ci/run does it), or put promtool from https://prometheus.io/download/ on the PATH",
    );
  }
  return "promtool";
}

/** `promtool check metrics` on `text`: its exit code and what it said. */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  const bin = requirePromtool();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

/** One sample's value: `name{labels}` exactly as exposed (labels in prom-client's order). */
export function sample(text: string, series: string): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

/** Every value the label `label` takes among the samples of `name`. */
export function labelValues(text: string, name: string, label: string): Set<string> {
  const values = new Set<string>();
  const re = new RegExp(`${label}="((?:[^"\\\\]|\\\\.)*)"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name}_bucket{`)) continue;
    const found = re.exec(line);
    if (found !== null) values.add(found[1]!);
  }
  return values;
}
