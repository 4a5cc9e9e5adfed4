import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  Bucket,
  Database,
  StateErrorCode,
  type StorageHealth,
  StorageMonitor,
} from "../../../src/index.js";

// A database whose writes fail on demand (the fault-injecting form of the real one): what a
// failed write does to the writes after it, to reads, and how writes come back.

let dir: string;
let fault: Error | undefined;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-storage-"));
  fault = undefined;
  db = await Database.open(join(dir, "db"), { faults: { beforeWrite: () => fault } });
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const key = (n: number) => Uint8Array.of(n);
const put = (n: number, v: number) =>
  db.write([{ type: "put", bucket: Bucket.META, key: key(n), value: Uint8Array.of(v) }]);

describe("a database whose write fails", () => {
  it("refuses later writes with the reason, serves reads, and takes writes after a probe lands", async () => {
    const seen: StorageHealth[] = [];
    db.onHealthChange((h) => seen.push(h));
    await put(1, 1);
    fault = new Error("IO error: /x/000003.log: No space left on device");
    await expect(put(2, 2)).rejects.toThrow(
      expect.objectContaining({
        code: StateErrorCode.STORAGE_UNAVAILABLE,
        message: `the node's storage takes no writes: no space left on the device (IO error: /x/000003.log: No space left on device); database ${join(dir, "db")}`,
      }),
    );
    expect(db.health()).toMatchObject({ writable: false, reason: expect.any(String) });
    // Nothing of the failed write is readable; what landed before is.
    expect(await db.get(Bucket.META, key(2))).toBeUndefined();
    expect(await db.get(Bucket.META, key(1))).toEqual(Uint8Array.of(1));
    // Refused at once, without reaching LevelDB, even with the fault gone.
    fault = undefined;
    await expect(put(3, 3)).rejects.toThrow("the node's storage takes no writes");
    expect(await db.get(Bucket.META, key(3))).toBeUndefined();
    // A probe while the fault is back fails, even after reopening the database.
    fault = new Error("IO error: still full");
    expect(await db.probe()).toBe(false);
    expect(db.health().writable).toBe(false);
    expect(await db.get(Bucket.META, key(1))).toEqual(Uint8Array.of(1));
    fault = undefined;
    expect(await db.probe()).toBe(true);
    expect(db.health()).toEqual({ writable: true });
    await put(4, 4);
    expect(await db.get(Bucket.META, key(4))).toEqual(Uint8Array.of(4));
    expect(seen.map((h) => h.writable)).toEqual([false, true]);
  });

  it("refuses writes in advance while free space is low, until it is not", async () => {
    db.setLowSpace("free space 3.0 MiB is below the minimum of 64.0 MiB (--min-free-space)");
    await expect(put(1, 1)).rejects.toThrow(
      "the node's storage takes no writes: free space 3.0 MiB is below the minimum of 64.0 MiB (--min-free-space)",
    );
    db.setLowSpace(undefined);
    await put(1, 1);
    expect(await db.get(Bucket.META, key(1))).toEqual(Uint8Array.of(1));
  });

  it("is refused and lifted by the monitor from the free space it reads", async () => {
    // No file system has this much free space: the minimum is never met.
    const monitor = new StorageMonitor(db, { minFreeBytes: Number.MAX_SAFE_INTEGER }, nullLogger);
    await monitor.check();
    expect(db.health()).toMatchObject({
      writable: false,
      reason: expect.stringMatching(
        /^free space .* MiB is below the minimum of .* \(--min-free-space\)$/,
      ),
    });
    monitor.stop();
    const none = new StorageMonitor(db, { minFreeBytes: 0 }, nullLogger);
    await none.check();
    expect(db.health().writable).toBe(false);
    db.setLowSpace(undefined);
    // A failed write is probed by the monitor, and lifted once the probe lands.
    fault = new Error("IO error: No space left on device");
    await expect(put(1, 1)).rejects.toThrow();
    await none.check();
    expect(db.health().writable).toBe(false);
    fault = undefined;
    await none.check();
    expect(db.health().writable).toBe(true);
    none.stop();
  });
});

describe("opening a database", () => {
  it("says when another holder has it", async () => {
    await expect(Database.open(join(dir, "db"))).rejects.toThrow(
      `cannot open the database in ${join(dir, "db")}: in use by another process (a running node?)`,
    );
  });
});
