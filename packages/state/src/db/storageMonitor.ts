import { statfs } from "node:fs/promises";
import type { Logger } from "@nodex/types";
import type { Database, StorageHealth } from "./database.js";

export interface StorageMonitorOptions {
  /** Writes are refused while the database's file system has less free space; 0: no minimum. */
  readonly minFreeBytes: number;
  /** Milliseconds between two looks at the free space (and, while writes fail, two probes). */
  readonly intervalMs?: number;
}

/** A probe is tried only with at least this much free space (LevelDB writes a log and a table). */
const PROBE_FREE_BYTES = 1024 * 1024;
/** Free space before LevelDB is closed and opened again after a failure it holds on to. */
const REOPEN_FREE_BYTES = 32 * 1024 * 1024;

/**
 * Watches the database's file system: refuses writes before the disk is full (free space below
 * `minFreeBytes`, with a warning below twice that), and after a failed write probes the database
 * until writes land again. Changes of state are logged once each.
 */
export class StorageMonitor {
  readonly #db: Database;
  readonly #opts: Required<StorageMonitorOptions>;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;
  #warned = false;
  readonly #unsubscribe: () => void;

  constructor(db: Database, opts: StorageMonitorOptions, logger: Logger) {
    this.#db = db;
    this.#opts = { intervalMs: 1000, ...opts };
    this.#log = logger;
    this.#unsubscribe = db.onHealthChange((health) => this.#report(health));
  }

  /** Looks now, then at each interval, until `stop`. */
  start(): Promise<void> {
    this.#timer ??= setInterval(() => void this.check(), this.#opts.intervalMs);
    this.#timer.unref();
    return this.check();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unsubscribe();
  }

  /** One look: free space against the minimum, and a probe while writes fail. */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    const free = await freeBytes(this.#db.path);
    const min = this.#opts.minFreeBytes;
    if (free !== undefined && min > 0) {
      if (free < min) {
        this.#db.setLowSpace(
          `free space ${mebibytes(free)} is below the minimum of ${mebibytes(min)} (--min-free-space)`,
        );
      } else {
        this.#db.setLowSpace(undefined);
        if (free < 2 * min && !this.#warned) {
          this.#warned = true;
          this.#log.warn("Free disk space is low: writes stop below the minimum", {
            path: this.#db.path,
            freeMiB: Math.floor(free / 2 ** 20),
            minFreeMiB: Math.floor(min / 2 ** 20),
          });
        } else if (free >= 2 * min) {
          this.#warned = false;
        }
      }
    }
    if (this.#db.health().writable) return;
    if (free !== undefined && free < Math.max(min, PROBE_FREE_BYTES)) return;
    // LevelDB writes a new log and manifest when it opens: reopened only with room for them,
    // since reads have no handle while an open fails.
    await this.#db.probe({ reopen: free === undefined || free >= REOPEN_FREE_BYTES });
  }

  #report(health: StorageHealth): void {
    if (health.writable) {
      this.#log.info("Storage takes writes again: transactions and blocks are accepted", {
        path: this.#db.path,
      });
    } else {
      this.#log.error("Storage takes no writes: transactions are refused until it recovers", {
        path: this.#db.path,
        reason: health.reason,
      });
    }
  }
}

/** Bytes free to an unprivileged user on the file system of `path`, if it can be read. */
async function freeBytes(path: string): Promise<number | undefined> {
  try {
    const s = await statfs(path);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return undefined;
  }
}

function mebibytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
