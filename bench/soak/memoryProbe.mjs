// Loaded into a Node server by bench/soak (NODE_OPTIONS="--import <this file>"), not part of any
// node: appends the process's `process.memoryUsage()` as one JSON line to $SOAK_MEMORY_FILE
// every $SOAK_MEMORY_EVERY_MS (default 1000), from every thread it is loaded in (the heap
// figures are each thread's own isolate; `thread` is 0 for the main thread), on an unref'd timer.
// With SOAK_MEMORY_GC=1 it runs a full garbage collection before each reading, so `heapUsed` is
// the live heap (what a leak grows) rather than live plus garbage not yet swept.
import { appendFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { threadId } from "node:worker_threads";

const file = process.env.SOAK_MEMORY_FILE;
const everyMs = Number(process.env.SOAK_MEMORY_EVERY_MS ?? 1000);

if (file) {
  let collect;
  if (process.env.SOAK_MEMORY_GC === "1") {
    setFlagsFromString("--expose-gc");
    collect = runInNewContext("gc");
  }
  const timer = setInterval(() => {
    collect?.();
    const m = process.memoryUsage();
    try {
      appendFileSync(
        file,
        `${JSON.stringify({ pid: process.pid, thread: threadId, t: Date.now(), ...m })}\n`,
      );
    } catch {}
  }, everyMs);
  timer.unref();
}
