import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The servers a hosted endpoint runs beside its replicas (Redis, HAProxy), as Debian installs
// them (`.ci/run` does), started by tests on 127.0.0.1 with a free port and a temp directory,
// and stopped by PID.

/** Debian puts haproxy in /usr/sbin, which a user's PATH may lack. */
const HAPROXY = existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy";

/** A free TCP port on 127.0.0.1 (the kernel's choice, released for the server to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

/** A child process whose output is kept and whose end can be awaited. */
interface Child {
  readonly process: ChildProcess;
  output(): string;
  readonly exited: Promise<void>;
}

function run(command: string, args: readonly string[], cwd: string): Child {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (d: string) => {
    output += d;
  });
  child.stderr.on("data", (d: string) => {
    output += d;
  });
  child.once("error", (err) => {
    output += `\n${command}: ${err.message}`;
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  return { process: child, output: () => output, exited };
}

async function waitFor(what: string, probe: () => Promise<boolean>, child: Child, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return;
    if (child.output().includes("ENOENT"))
      throw new Error(
        `${what} is not installed: apt-get install -y redis-server haproxy (what .ci/run does)`,
      );
    if (child.process.exitCode !== null || child.process.signalCode !== null)
      throw new Error(`${what} exited before it was ready:\n${child.output()}`);
    if (Date.now() > deadline)
      throw new Error(`${what} not ready after ${ms} ms:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stopChild(child: Child, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const p = child.process;
  if (p.exitCode === null && p.signalCode === null && p.pid !== undefined) p.kill(signal);
  await child.exited;
}

export interface RunningRedis {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Stops it (SIGTERM by PID); its data stays in its directory for `start`. */
  down(): Promise<void>;
  /** Starts it again on the same port with the same data (what it wrote before `down`). */
  up(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing is answered. */
  pause(): void;
  /** SIGCONT after `pause`. */
  resume(): void;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

/**
 * Starts Debian's `redis-server` on 127.0.0.1 and a free port, with its data in a temp
 * directory: an append-only file (written to disk at least every second, and at a shutdown by SIGTERM), so that `down` then `up` keeps the
 * data, as a deployment's Redis with persistence does.
 */
export async function startRedis(): Promise<RunningRedis> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-redis-"));
  const port = await freePort();
  let child: Child | undefined;
  const up = async () => {
    const c = run(
      "redis-server",
      [
        "--bind",
        "127.0.0.1",
        "--port",
        String(port),
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
      ],
      dir,
    );
    child = c;
    await waitFor(
      "redis-server",
      async () => c.output().includes("Ready to accept connections"),
      c,
    );
  };
  try {
    await up();
  } catch (err) {
    if (child !== undefined) await stopChild(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child!.process.pid!;
    },
    down: async () => {
      if (child !== undefined) await stopChild(child);
    },
    up,
    pause: () => {
      child?.process.kill("SIGSTOP");
    },
    resume: () => {
      child?.process.kill("SIGCONT");
    },
    stop: async () => {
      if (child !== undefined) {
        child.process.kill("SIGCONT");
        await stopChild(child);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RunningHaproxy {
  /** The balancer's URL: JSON-RPC requests go to the replicas in turn. */
  readonly url: string;
  readonly pid: number;
  /** The state HAProxy's health checks give each replica (`UP`, `DOWN`, …), by server name. */
  servers(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/**
 * Starts Debian's `haproxy` on 127.0.0.1 and a free port in front of `backends` (`r0`, `r1`, …
 * in order): round-robin, health checks on `/health` every 300 ms (down after 3 failures), a request whose connection
 * to a replica fails sent to another, and the name of the replica that answered in the
 * `x-served-by` header.
 */
export async function startHaproxy(
  backends: readonly { readonly port: number; readonly host?: string }[],
): Promise<RunningHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-haproxy-"));
  const port = await freePort();
  const statsPort = await freePort();
  const config = [
    "global",
    "  maxconn 1024",
    "defaults",
    "  mode http",
    "  timeout connect 2s",
    "  timeout client 30s",
    "  timeout server 30s",
    "  retries 3",
    "  option redispatch 1",
    // A replica that died holding a kept-alive connection answers nothing: the request goes
    // to another (it never ran: the replica was gone).
    "  retry-on conn-failure empty-response",
    "frontend rpc",
    `  bind 127.0.0.1:${port}`,
    "  default_backend replicas",
    "backend replicas",
    "  balance roundrobin",
    "  option httpchk GET /health",
    "  http-check expect status 200",
    "  http-response set-header x-served-by %s",
    "  timeout check 5s",
    "  default-server inter 300ms fall 3 rise 2",
    ...backends.map((b, i) => `  server r${i} ${b.host ?? "127.0.0.1"}:${b.port} check`),
    "listen stats",
    `  bind 127.0.0.1:${statsPort}`,
    "  stats enable",
    "  stats uri /stats",
    "",
  ].join("\n");
  const path = join(dir, "haproxy.cfg");
  writeFileSync(path, config);
  const child = run(HAPROXY, ["-db", "-f", path], dir);
  const servers = async (): Promise<Record<string, string>> => {
    const res = await fetch(`http://127.0.0.1:${statsPort}/stats;csv`);
    const out: Record<string, string> = {};
    for (const line of (await res.text()).split("\n")) {
      const f = line.split(",");
      if (f[0] === "replicas" && /^r\d+$/.test(f[1] ?? "")) out[f[1]!] = f[17]!;
    }
    return out;
  };
  try {
    await waitFor(
      "haproxy",
      async () => (await accepts(port)) && (await accepts(statsPort)),
      child,
    );
  } catch (err) {
    await stopChild(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.process.pid!,
    servers,
    stop: async () => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
