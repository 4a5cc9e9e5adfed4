import type { FoundLog } from "@nodex/chain";
import type { Address, Hash32 } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatLog,
  formatLogsJson,
  formatLogsJsonBytes,
  LOGS_JSON_ROOM,
} from "../../../src/modules/format.js";

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const foundLog: fc.Arbitrary<FoundLog> = fc.record({
  log: fc.record({
    address: bytes(20).map((b) => b as Address),
    topics: fc.array(
      bytes(32).map((b) => b as Hash32),
      { maxLength: 4 },
    ),
    data: fc.uint8Array({ maxLength: 300 }),
  }),
  blockHash: bytes(32),
  blockNumber: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  transactionHash: bytes(32),
  transactionIndex: fc.nat(),
  logIndex: fc.nat(),
});

describe("formatLogsJson", () => {
  it("writes what JSON.stringify writes of formatLog's objects, removed or not", () => {
    fc.assert(
      fc.property(fc.array(foundLog, { maxLength: 5 }), fc.boolean(), (logs, removed) => {
        expect(formatLogsJson(logs, removed)).toBe(
          JSON.stringify(logs.map((log) => formatLog(log, removed))),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("writes the same again for logs it wrote before (their text is remembered), in any order and removed", () => {
    fc.assert(
      fc.property(fc.array(foundLog, { minLength: 1, maxLength: 5 }), (logs) => {
        const expected = (list: readonly FoundLog[], removed = false) =>
          JSON.stringify(list.map((log) => formatLog(log, removed)));
        expect(formatLogsJson(logs)).toBe(expected(logs));
        expect(formatLogsJson(logs)).toBe(expected(logs));
        const reordered = [...logs.slice(1), logs[0]!, logs[0]!];
        expect(formatLogsJson(reordered)).toBe(expected(reordered));
        expect(formatLogsJson(reordered, true)).toBe(expected(reordered, true));
      }),
      { numRuns: 200 },
    );
  });

  it("writes the edges: no logs, no topics, no data, the largest quantities", () => {
    expect(formatLogsJson([])).toBe("[]");
    const edge: FoundLog = {
      log: { address: new Uint8Array(20) as Address, topics: [], data: new Uint8Array() },
      blockHash: new Uint8Array(32).fill(0xff),
      blockNumber: 2n ** 64n - 1n,
      transactionHash: new Uint8Array(32).fill(0xab),
      transactionIndex: Number.MAX_SAFE_INTEGER,
      logIndex: 0,
    };
    expect(formatLogsJson([edge])).toBe(
      `[{"removed":false,"logIndex":"0x0","transactionIndex":"0x1fffffffffffff","transactionHash":"0x${"ab".repeat(32)}","blockHash":"0x${"ff".repeat(32)}","blockNumber":"0xffffffffffffffff","address":"0x${"00".repeat(20)}","data":"0x","topics":[]}]`,
    );
    expect(formatLogsJson([edge, edge], true)).toBe(
      JSON.stringify([formatLog(edge, true), formatLog(edge, true)]),
    );
  });

  it("writes as bytes what it writes as text, in a buffer of their own with room around them, before and after the texts are remembered", () => {
    fc.assert(
      fc.property(fc.array(foundLog, { maxLength: 5 }), (logs) => {
        const expected = JSON.stringify(logs.map((log) => formatLog(log)));
        for (let round = 0; round < 2; round++) {
          const out = formatLogsJsonBytes(logs);
          expect(Buffer.from(out).toString("utf8")).toBe(expected);
          // Its own, with the room for the response's head and brace around it: the buffer can
          // be moved to another thread without taking others' bytes.
          expect(out.byteOffset).toBe(LOGS_JSON_ROOM.before);
          expect(out.buffer.byteLength).toBe(
            LOGS_JSON_ROOM.before + out.length + LOGS_JSON_ROOM.after,
          );
        }
      }),
      { numRuns: 200 },
    );
  });
});
