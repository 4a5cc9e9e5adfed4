import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "@nodex/types";
import { afterAll, describe, expect, it } from "vitest";
import { AccessLogWriter, accessLine } from "../../src/accessLog.js";

const dir = mkdtempSync(join(tmpdir(), "nodex-access-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (i: number) => ({
  key: undefined,
  time: new Date(0).toISOString(),
  transport: "http" as const,
  remote: "127.0.0.1",
  methods: ["eth_blockNumber"],
  calls: 1,
  errors: [],
  ms: i,
  bytesIn: 1,
  bytesOut: 2,
});

describe("AccessLogWriter", () => {
  it("writes nothing on the caller's turn, and every line by the end of close", async () => {
    const file = join(dir, "a.log");
    const writer = await AccessLogWriter.open(file, nullLogger);
    for (let i = 0; i < 1000; i++) writer.write(record(i));
    // Buffered: the lines go out on a later turn of the event loop.
    expect(readFileSync(file, "utf8")).toBe("");
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 1000; i < 5000; i++) writer.write(record(i));
    await writer.close();
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(5000);
    expect(lines.map((l) => (JSON.parse(l) as { ms: number }).ms)).toEqual(
      Array.from({ length: 5000 }, (_, i) => i),
    );
  });

  it("appends to what the file holds", async () => {
    const file = join(dir, "b.log");
    for (let round = 0; round < 2; round++) {
      const writer = await AccessLogWriter.open(file, nullLogger);
      writer.write(record(round));
      await writer.close();
    }
    expect(readFileSync(file, "utf8").trimEnd().split("\n")).toHaveLength(2);
  });
});

describe("accessLine", () => {
  it("is the record's JSON, absent fields left out, odd strings escaped", () => {
    const full = {
      ...record(1.5),
      key: 'team "a"\n',
      httpMethod: "POST",
      status: 200,
      methods: ["eth_call", "other"],
      calls: 20,
      errors: [-32601, 3],
    };
    expect(JSON.parse(accessLine(full))).toEqual(full);
    expect(accessLine(full).endsWith("}\n")).toBe(true);
    const ws = { ...record(2), transport: "ws" as const, remote: undefined };
    const parsed = JSON.parse(accessLine(ws)) as Record<string, unknown>;
    expect(parsed).toEqual({ ...ws, remote: undefined, key: undefined });
    expect(Object.keys(parsed)).not.toContain("remote");
    expect(Object.keys(parsed)).not.toContain("status");
  });
});
