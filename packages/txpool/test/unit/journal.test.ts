import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JOURNAL_HEADER, TxPool, TxPoolErrorCode } from "../../src/index.js";
import { CHAIN_ID, head, richState, sender, transfer } from "./helpers.js";

let dir: string;
let path: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "nodex-txpool-"));
  path = join(dir, "txpool", "locals.journal");
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
}

describe("journal", () => {
  it("round trip: locals are written after each change and loaded again at start", async () => {
    const state = richState(2);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    await pool.add(transfer(0, 0), head(state), { local: true });
    await pool.add(transfer(0, 2), head(state), { local: true });
    await pool.add(transfer(1, 0), head(state)); // remote: not journaled
    const text = await readFile(path, "utf8");
    expect(text.startsWith(`${JOURNAL_HEADER}\n`)).toBe(true);
    expect(lines(text)).toEqual([bytesToHex(transfer(0, 0).raw), bytesToHex(transfer(0, 2).raw)]);

    const again = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    expect(await again.loadJournal(head(state))).toEqual({ loaded: 2, dropped: 0, reasons: [] });
    expect(again.get(transfer(0, 0).hash)).toEqual({
      tx: transfer(0, 0),
      status: "pending",
      local: true,
    });
    expect(again.get(transfer(0, 2).hash)?.status).toBe("queued");
    expect(again.get(transfer(1, 0).hash)).toBeUndefined();
  });

  it("follows removals and replacements of locals", async () => {
    const state = richState(1);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    await pool.add(transfer(0, 0, 10n), head(state), { local: true });
    await pool.add(transfer(0, 1, 10n), head(state), { local: true });
    await pool.add(transfer(0, 1, 20n), head(state), { local: true });
    await pool.closeJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([
      bytesToHex(transfer(0, 0, 10n).raw),
      bytesToHex(transfer(0, 1, 20n).raw),
    ]);
    pool.remove([transfer(0, 0, 10n).hash]);
    await pool.closeJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([bytesToHex(transfer(0, 1, 20n).raw)]);
    pool.clear();
    await pool.flushJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([]);
  });

  it("appends each new local without rewriting; stale lines go at a rewrite, and a reload keeps the live ones", async () => {
    const state = richState(1);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    await pool.add(transfer(0, 0), head(state), { local: true });
    await pool.add(transfer(0, 1), head(state), { local: true });
    pool.remove([transfer(0, 0).hash]);
    await pool.flushJournal();
    // Written as they came; the mined one stays until a rewrite.
    expect(lines(await readFile(path, "utf8"))).toEqual([
      bytesToHex(transfer(0, 0).raw),
      bytesToHex(transfer(0, 1).raw),
    ]);
    state.set(sender(0), { nonce: 1n });
    const again = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    const loaded = await again.loadJournal(head(state));
    expect(loaded.loaded).toBe(1);
    expect(again.get(transfer(0, 1).hash)?.local).toBe(true);
    // Loading rewrites the journal with what is live.
    expect(lines(await readFile(path, "utf8"))).toEqual([bytesToHex(transfer(0, 1).raw)]);
    await again.add(transfer(0, 2), head(state), { local: true });
    await again.flushJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([
      bytesToHex(transfer(0, 1).raw),
      bytesToHex(transfer(0, 2).raw),
    ]);
  });

  it("rewrites once stale lines outnumber the live ones", async () => {
    const state = richState(1);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    for (let n = 0; n < 300; n++) {
      state.set(sender(0), { nonce: BigInt(n) }); // the one before was mined
      await pool.add(transfer(0, n), head(state), { local: true });
      pool.remove([transfer(0, n).hash]);
    }
    await pool.flushJournal();
    // 300 lines were appended and all went stale: at most 256 stale lines are kept.
    expect(lines(await readFile(path, "utf8")).length).toBeLessThanOrEqual(257);
    expect(lines(await readFile(path, "utf8")).length).toBeGreaterThan(0);
    await pool.closeJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([]);
  });

  it("follows locals dropped when an add finds the sender's nonce moved on", async () => {
    const state = richState(1);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    await pool.add(transfer(0, 0), head(state), { local: true });
    await pool.add(transfer(0, 1), head(state), { local: true });
    state.set(sender(0), { nonce: 1n }); // 0 mined; the pool has not seen the head yet
    await pool.add(transfer(0, 2), head(state));
    await pool.closeJournal();
    expect(lines(await readFile(path, "utf8"))).toEqual([bytesToHex(transfer(0, 1).raw)]);
  });

  it("drops and reports what is no longer valid against the head, and rewrites the journal", async () => {
    const state = richState(1);
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    for (const n of [0, 1, 2]) await pool.add(transfer(0, n), head(state), { local: true });
    state.set(sender(0), { nonce: 2n }); // 0 and 1 were mined meanwhile
    const again = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    const result = await again.loadJournal(head(state));
    expect(result.loaded).toBe(1);
    expect(result.dropped).toBe(2);
    expect(result.reasons[0]).toBe(
      `journal transaction ${bytesToHex(transfer(0, 0).hash)}: transaction nonce too low: address ${bytesToHex(sender(0))}, tx 0, state 2`,
    );
    expect(lines(await readFile(path, "utf8"))).toEqual([bytesToHex(transfer(0, 2).raw)]);
  });

  it("a corrupt journal is reported, not a crash: good lines load, bad ones are named", async () => {
    const { mkdir } = await import("node:fs/promises");
    await mkdir(join(dir, "txpool"), { recursive: true });
    await writeFile(
      path,
      [
        JOURNAL_HEADER,
        bytesToHex(transfer(0, 0).raw),
        "0xzz not hex",
        "0xc0", // an empty RLP list: not a transaction
        bytesToHex(transfer(0, 1).raw).slice(0, 40), // truncated
        "\u0000\u0001binary",
        bytesToHex(transfer(0, 1).raw),
      ].join("\n"),
    );
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    const result = await pool.loadJournal(head(richState(1)));
    expect(result.loaded).toBe(2);
    expect(result.dropped).toBe(4);
    expect(result.reasons.slice(0, 2)).toEqual([
      "journal line 3: not a transaction's 0x hex",
      "journal line 6: not a transaction's 0x hex",
    ]);
    expect(result.reasons[2]).toMatch(/^journal transaction 0xc0: /);
    expect(pool.status()).toEqual({ pending: 2, queued: 0 });
    expect(lines(await readFile(path, "utf8"))).toHaveLength(2);
  });

  it("no journal file loads nothing; no journal path loads nothing", async () => {
    const pool = new TxPool({ chainId: CHAIN_ID, journalPath: path });
    expect(await pool.loadJournal(head(richState(1)))).toEqual({
      loaded: 0,
      dropped: 0,
      reasons: [],
    });
    const none = new TxPool({ chainId: CHAIN_ID });
    expect(await none.loadJournal(head(richState(1)))).toEqual({
      loaded: 0,
      dropped: 0,
      reasons: [],
    });
  });

  it("refuses a local transaction the journal cannot keep, and takes remote ones", async () => {
    await writeFile(join(dir, "file"), "");
    const pool = new TxPool({
      chainId: CHAIN_ID,
      journalPath: join(dir, "file", "locals.journal"),
    });
    await expect(pool.add(transfer(0, 0), head(richState(1)), { local: true })).rejects.toThrow(
      expect.objectContaining({
        code: TxPoolErrorCode.JOURNAL_WRITE_FAILED,
        message: expect.stringMatching(
          /^transaction not accepted: the txpool journal .*locals\.journal cannot be written \(EEXIST/,
        ),
      }),
    );
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    // The failure stays reported until a write succeeds.
    await expect(pool.flushJournal()).rejects.toThrow(/^txpool journal not written: /);
    await expect(pool.flushJournal()).resolves.toBeUndefined();
    // Remote transactions are not journaled: the pool keeps working for them.
    expect((await pool.add(transfer(0, 0), head(richState(1)))).status).toBe("pending");
    // Once the file can be written, the next local transaction is, and the journal is whole.
    await rm(join(dir, "file"));
    await mkdir(join(dir, "file"));
    expect((await pool.add(transfer(0, 1), head(richState(1)), { local: true })).status).toBe(
      "pending",
    );
    const reloaded = new TxPool({
      chainId: CHAIN_ID,
      journalPath: join(dir, "file", "locals.journal"),
    });
    expect((await reloaded.loadJournal(head(richState(1)))).loaded).toBe(1);
  });

  it("refuses a local transaction when the disk is full", async () => {
    // /dev/full fails every write with ENOSPC, as a full disk does.
    const full = new TxPool({ chainId: CHAIN_ID, journalPath: "/dev/full" });
    await expect(full.add(transfer(0, 0), head(richState(1)), { local: true })).rejects.toThrow(
      /no space left on device/i,
    );
    expect(full.status()).toEqual({ pending: 0, queued: 0 });
  });
});
