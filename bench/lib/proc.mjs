// Child processes for the benches, Linux /proc readings (listening sockets, CPU time).
// Every server runs in its own process group; all of them are stopped by PID.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { sleep } from "./format.mjs";

const running = new Set();

export function startChild({ cmd, args: argv, cwd, env }, logFile) {
  const log = openSync(logFile, "a");
  let child;
  try {
    child = spawn(cmd, argv, {
      cwd,
      env: { ...process.env, ...env },
      // stdin is a pipe the bench never writes: our candidate servers exit when it closes,
      // so they go away even if the bench is killed. Output goes to a file, not through us.
      stdio: ["pipe", log, log],
      detached: true,
    });
  } finally {
    closeSync(log);
  }
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (err) => resolve({ code: null, signal: null, error: err }));
  });
  child.stdin.on("error", () => {});
  const handle = { child, pid: child.pid, exited, done: false };
  exited.then(() => {
    handle.done = true;
  });
  running.add(handle);
  return handle;
}

/** PIDs of the processes in process group `pgid` (Linux /proc; empty elsewhere). */
export function groupMembers(pgid) {
  const out = [];
  let entries = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) out.push(Number(e));
    } catch {}
  }
  return out;
}

function signalGroup(handle, signal) {
  if (handle.done) return;
  try {
    process.kill(-handle.pid, signal);
  } catch {}
}

/** SIGTERM to the child's process group, SIGKILL after `graceMs`; then any member left. */
export async function stopChild(handle, graceMs = 5000) {
  if (!handle) return;
  signalGroup(handle, "SIGTERM");
  const timedOut = await Promise.race([
    handle.exited.then(() => false),
    sleep(graceMs).then(() => true),
  ]);
  if (timedOut) {
    signalGroup(handle, "SIGKILL");
    await Promise.race([handle.exited, sleep(2000)]);
  }
  // Grandchildren left in the group (the group id keeps their PIDs from being reused): kill each.
  for (const pid of groupMembers(handle.pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  running.delete(handle);
}

export function killAllSync() {
  for (const handle of running) {
    signalGroup(handle, "SIGKILL");
    for (const pid of groupMembers(handle.pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
  running.clear();
}

/**
 * Stops every child on exit and on SIGINT/SIGTERM/SIGHUP (exit code 130); `extra` runs after
 * (removing temp folders). Returns the synchronous cleanup, to call at the end of a run.
 */
export function installCleanup(extra = () => {}) {
  const cleanupSync = () => {
    killAllSync();
    try {
      extra();
    } catch {}
  };
  process.on("exit", cleanupSync);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping servers\n`);
      cleanupSync();
      process.exit(130);
    });
  }
  return cleanupSync;
}

/** Addresses the process listens on (TCP, Linux /proc), to check that it is loopback only. */
export function listeningAddresses(pid) {
  const inodes = new Set();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {}
    }
  } catch {
    return undefined;
  }
  const out = [];
  for (const file of ["tcp", "tcp6"]) {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A" || !inodes.has(f[9])) continue;
      const [hex, portHex] = f[1].split(":");
      out.push({ address: hexToIP(hex), port: Number.parseInt(portHex, 16) });
    }
  }
  return out;
}

function hexToIP(hex) {
  if (hex.length === 8)
    return hex
      .match(/../g)
      .reverse()
      .map((b) => Number.parseInt(b, 16))
      .join(".");
  if (hex === "00000000000000000000000001000000") return "::1";
  if (hex === "00000000000000000000000000000000") return "::";
  if (hex.startsWith("0000000000000000FFFF0000")) return `::ffff:${hexToIP(hex.slice(24))}`;
  return hex;
}

export function isLoopback(address) {
  return address.startsWith("127.") || address === "::1" || address.startsWith("::ffff:127.");
}

/** utime+stime of a process, in seconds (Linux /proc; undefined elsewhere). */
export function cpuSeconds(pid) {
  return statSeconds(`/proc/${pid}/stat`);
}

/**
 * utime+stime of a process's first thread, in seconds: where Node runs JavaScript (a Rust node
 * such as Anvil does most of its work on other threads). Undefined off Linux.
 */
export function mainThreadSeconds(pid) {
  return statSeconds(`/proc/${pid}/task/${pid}/stat`);
}

/** utime+stime from a `stat` file of /proc (a process's or a thread's), in seconds. */
function statSeconds(path) {
  try {
    const stat = readFileSync(path, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** Busy CPU seconds of the whole machine, all cores (Linux /proc/stat; undefined elsewhere). */
export function machineBusySeconds() {
  try {
    const f = readFileSync("/proc/stat", "utf8")
      .split("\n", 1)[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / CLK_TCK;
  } catch {
    return undefined;
  }
}

export const CLK_TCK = (() => {
  const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const n = Number(r.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

// ---------------------------------------------------------------------------------------------
// HTTP helpers
