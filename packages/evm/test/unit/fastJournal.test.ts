import { createEVM } from "@ethereumjs/evm";
import { Address as EJSAddress } from "@ethereumjs/util";
import { describe, expect, it } from "vitest";
import { FAST_JOURNAL_METHODS, installFastJournal } from "../../src/fastJournal.js";

/** A seeded generator, so that a failure names a sequence that can be run again. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s;
  };
}

type Journal = Record<string, unknown> & {
  journal: Map<string, Set<string>>;
  alwaysWarmJournal: Map<string, Set<string>>;
  journalDiff: [number, [Set<string>, Map<string, Set<string>>, Set<string>]][];
  accessList?: Map<string, Set<string>>;
  touched: Set<string>;
  journalHeight: number;
};

/** A journal's contents in a comparable form. */
function snapshot(j: Journal) {
  const sets = (m: Map<string, Set<string>> | undefined) =>
    m === undefined ? undefined : [...m].map(([k, v]) => [k, [...v]]);
  return {
    journal: sets(j.journal),
    alwaysWarm: sets(j.alwaysWarmJournal),
    touched: [...j.touched],
    height: j.journalHeight,
    diff: j.journalDiff.map(([h, [addresses, slots, touched]]) => [
      h,
      [...addresses],
      sets(slots),
      [...touched],
    ]),
    accessList: sets(j.accessList),
  };
}

describe("the journal's warm sets", () => {
  it("give the library's answers and contents on random sequences, checkpoints and reverts", async () => {
    const fast = (await createEVM()).journal as unknown as Journal;
    const library = (await createEVM()).journal as unknown as Journal;
    const proto = Object.getPrototypeOf(fast) as Record<string, unknown>;
    // The library's methods, kept on the one journal as its own before the prototype changes.
    for (const name of FAST_JOURNAL_METHODS) library[name] = proto[name];
    installFastJournal(fast.constructor as { prototype: object });
    expect(FAST_JOURNAL_METHODS.every((name) => proto[name] !== library[name])).toBe(true);

    const next = random(20261124);
    const addresses = Array.from({ length: 5 }, (_, i) =>
      Uint8Array.from({ length: 20 }, (_, j) => (i * 37 + j * 11) & 0xff),
    );
    // Slots of 32 bytes, and views into a larger buffer (as the interpreter's words may be).
    const backing = Uint8Array.from({ length: 96 }, (_, i) => (i * 29) & 0xff);
    const slots = [
      new Uint8Array(32),
      Uint8Array.from({ length: 32 }, (_, i) => i),
      backing.subarray(7, 39),
      backing.subarray(40, 72),
      Uint8Array.from({ length: 32 }, () => 0xff),
    ];
    const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
    const pick = <T>(list: readonly T[]): T => list[next() % list.length]!;
    let answers = 0;
    for (let round = 0; round < 40; round++) {
      for (const j of [fast, library]) (j.cleanJournal as () => void).call(j);
      if (round % 2 === 1) {
        for (const j of [fast, library]) (j.startReportingAccessList as () => void).call(j);
      }
      for (let step = 0; step < 200; step++) {
        const op = next() % 10;
        const address = pick(addresses);
        const slot = pick(slots);
        const both = async (name: string, ...args: unknown[]) => {
          const a = await (fast[name] as (...x: unknown[]) => unknown).apply(fast, args);
          const b = await (library[name] as (...x: unknown[]) => unknown).apply(library, args);
          expect(a, `${name} at round ${round}, step ${step}`).toEqual(b);
          if (typeof a === "boolean") answers += a ? 1 : 0;
        };
        switch (op) {
          case 0:
            await both("isWarmedAddress", address);
            break;
          case 1:
            await both("addWarmedAddress", address);
            break;
          case 2:
            await both("isWarmedStorage", address, slot);
            break;
          case 3:
            // The library's access list needs the address in it before a slot.
            if (round % 2 === 0 || fast.journal.has(hex(address)))
              await both("addWarmedStorage", address, slot);
            break;
          case 4: {
            const form = next() % 3;
            const text = form === 0 ? hex(address) : form === 1 ? `0x${hex(address)}` : "0x";
            await both("addAlwaysWarmAddress", text, next() % 2 === 0);
            break;
          }
          case 5:
            await both("touchAddress", new EJSAddress(address));
            break;
          case 6:
            await both("checkpoint");
            break;
          case 7:
            if (fast.journalHeight > 0) await both("commit");
            break;
          case 8:
            if (fast.journalHeight > 0) await both("revert");
            break;
          case 9:
            // The library's own (an access list's slots), read by `isWarmedStorage`.
            await both("addAlwaysWarmSlot", hex(address), hex(slot), next() % 2 === 0);
            break;
        }
        expect(snapshot(fast), `round ${round}, step ${step}`).toEqual(snapshot(library));
      }
    }
    // The sequences found warm addresses and slots, not only cold ones.
    expect(answers).toBeGreaterThan(100);
  });
});
