import type { Stream } from "@libp2p/interface";
import { streamPair } from "@libp2p/utils";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { P2PErrorCode } from "../../src/errors.js";
import { encodeFrame, encodeVarint, FrameReader, writeFrame } from "../../src/framing.js";

async function pair(): Promise<[Stream, Stream]> {
  return streamPair();
}

describe("framing", () => {
  it("encodes lengths as minimal unsigned LEB128 varints", () => {
    expect([...encodeVarint(0)]).toEqual([0]);
    expect([...encodeVarint(127)]).toEqual([127]);
    expect([...encodeVarint(128)]).toEqual([0x80, 0x01]);
    expect([...encodeVarint(300)]).toEqual([0xac, 0x02]);
    expect([...encodeVarint(2 ** 21)]).toEqual([0x80, 0x80, 0x80, 0x01]);
    expect(() => encodeVarint(-1)).toThrow(RangeError);
  });

  it("reads back every frame written, in order, then undefined at the end", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 600 }), { maxLength: 6 }),
        async (payloads) => {
          const [a, b] = await pair();
          const reader = new FrameReader(b);
          for (const p of payloads) await writeFrame(a, p);
          await a.close();
          for (const p of payloads) expect(await reader.read(600)).toEqual(p);
          expect(await reader.read(600)).toBeUndefined();
        },
      ),
      { numRuns: 25 },
    );
  });

  it("reads frames split across chunks at any byte", async () => {
    const payload = Uint8Array.from({ length: 300 }, (_, i) => i % 251);
    const bytes = new Uint8Array([...encodeFrame(payload), ...encodeFrame(Uint8Array.of(9))]);
    const [a, b] = await pair();
    const reader = new FrameReader(b);
    for (let i = 0; i < bytes.length; i += 7) a.send(bytes.subarray(i, i + 7));
    await a.close();
    expect(await reader.read(300)).toEqual(payload);
    expect(await reader.read(300)).toEqual(Uint8Array.of(9));
    expect(await reader.read(300)).toBeUndefined();
  });

  it("rejects a declared length over the cap before its payload arrives", async () => {
    const [a, b] = await pair();
    const reader = new FrameReader(b);
    a.send(encodeVarint(1_000_001)); // the prefix alone: the payload never comes
    await expect(reader.read(1_000_000)).rejects.toMatchObject({
      code: P2PErrorCode.FRAME_TOO_LARGE,
    });
    const [c, d] = await pair();
    await writeFrame(c, new Uint8Array(101));
    await expect(new FrameReader(d).read(100)).rejects.toMatchObject({
      code: P2PErrorCode.FRAME_TOO_LARGE,
      meta: { length: 101, maxBytes: 100 },
    });
    await Promise.all([a, b, c, d].map((s) => s.close()));
  });

  it("rejects malformed prefixes and truncated frames", async () => {
    const cases: [Uint8Array, string][] = [
      [Uint8Array.of(0x80, 0x00), "not minimal"],
      [Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "longer than 5 bytes"],
      [Uint8Array.of(0x80), "inside a length prefix"],
      [Uint8Array.of(5, 1, 2), "inside a frame: 2 of 5 bytes"],
    ];
    for (const [bytes, reason] of cases) {
      const [a, b] = await pair();
      a.send(bytes);
      await a.close();
      await expect(new FrameReader(b).read(2 ** 40)).rejects.toMatchObject({
        code: P2PErrorCode.FRAME_MALFORMED,
        message: expect.stringContaining(reason),
      });
    }
  });

  it("gives up with TIMEOUT when the signal aborts before a frame is complete", async () => {
    const [a, b] = await pair();
    const reader = new FrameReader(b);
    a.send(Uint8Array.of(4, 1));
    const controller = new AbortController();
    const read = reader.read(10, { signal: controller.signal });
    controller.abort();
    await expect(read).rejects.toMatchObject({ code: P2PErrorCode.TIMEOUT });
    reader.release();
    await Promise.all([a.close(), b.close()]);
  });

  it("reports a reset stream as STREAM_CLOSED", async () => {
    const [a, b] = await pair();
    const reader = new FrameReader(b);
    const read = reader.read(10);
    a.abort(new Error("gone"));
    await expect(read).rejects.toMatchObject({ code: P2PErrorCode.STREAM_CLOSED });
  });
});
