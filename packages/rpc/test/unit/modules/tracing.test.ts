import { CodecError } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { parseTraceConfig } from "../../../src/modules/debug.js";
import { MAX_TRACES_PER_REQUEST, parseTraceFilter } from "../../../src/modules/trace.js";

describe("parseTraceConfig", () => {
  it("defaults to the struct logger with everything captured", () => {
    expect(parseTraceConfig({}, 1)).toEqual({
      tracer: "structLogger",
      disableStack: false,
      disableMemory: false,
      disableStorage: false,
      enableReturnData: false,
      onlyTopCall: false,
      withLog: false,
      diffMode: false,
    });
  });

  it("takes tracerConfig's keys inside it and at the top level, and ignores unknown keys", () => {
    const inner = parseTraceConfig(
      { tracer: "callTracer", tracerConfig: { onlyTopCall: true, withLog: true } },
      1,
    );
    expect(inner).toMatchObject({ tracer: "callTracer", onlyTopCall: true, withLog: true });
    const top = parseTraceConfig(
      { tracer: "prestateTracer", diffMode: true, enableMemory: true, timeout: "5s" },
      1,
    );
    expect(top).toMatchObject({ tracer: "prestateTracer", diffMode: true });
    expect(parseTraceConfig({ disableStack: true, disableMemory: true }, 1)).toMatchObject({
      tracer: "structLogger",
      disableStack: true,
      disableMemory: true,
    });
  });

  it("refuses other tracers and flags that are not booleans", () => {
    expect(() => parseTraceConfig({ tracer: "4byteTracer" }, 1)).toThrow(CodecError);
    expect(() => parseTraceConfig({ disableStack: "yes" }, 1)).toThrow(/disableStack/);
    expect(() => parseTraceConfig([], 1)).toThrow(CodecError);
    expect(() => parseTraceConfig({ tracerConfig: 3 }, 1)).toThrow(/tracerConfig/);
  });
});

describe("parseTraceFilter", () => {
  it("defaults to earliest..latest, every address, the first 10,000 traces", () => {
    expect(parseTraceFilter({}, 0)).toEqual({
      fromBlock: { kind: "tag", tag: "earliest" },
      toBlock: { kind: "tag", tag: "latest" },
      fromAddress: [],
      toAddress: [],
      after: 0,
      count: MAX_TRACES_PER_REQUEST,
    });
  });

  it("reads numbers, tags, addresses (one or a list) and hex or number counts", () => {
    const address = `0x${"ab".repeat(20)}`;
    const f = parseTraceFilter(
      {
        fromBlock: "0x1",
        toBlock: "latest",
        fromAddress: address,
        toAddress: [address],
        after: "0x2",
        count: 3,
      },
      0,
    );
    expect(f.fromBlock).toEqual({ kind: "number", number: 1n });
    expect(f.fromAddress).toHaveLength(1);
    expect(f.toAddress).toHaveLength(1);
    expect(f.after).toBe(2);
    expect(f.count).toBe(3);
    // negative values are left to the method, which answers the reference node's messages
    expect(parseTraceFilter({ after: -1 }, 0).after).toBe(-1);
    expect(() => parseTraceFilter({ count: 1.5 }, 0)).toThrow(CodecError);
    expect(() => parseTraceFilter({ fromAddress: 7 }, 0)).toThrow(CodecError);
  });
});
