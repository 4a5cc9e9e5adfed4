import { decode as libraryDecode, encode as libraryEncode, RLP } from "@ethereumjs/rlp";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeRlp,
  encodeRlp,
  fastRlpInstalled,
  installFastRlp,
  type RLPItem,
} from "../../../src/index.js";

/**
 * A decoded value as text: bytes as hex (with their class when not a plain `Uint8Array`), lists
 * in brackets, objects (the stream form's `{data, remainder}`) by key. Comparing this text
 * checks what `toEqual` would, at a tenth of its cost on nested results, which was most of
 * the property tests' time.
 */
function show(value: unknown): string {
  if (value instanceof Uint8Array) {
    const hex = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex");
    return value.constructor === Uint8Array ? `0x${hex}` : `${value.constructor.name}:0x${hex}`;
  }
  if (Array.isArray(value)) return `[${value.map(show).join(",")}]`;
  if (typeof value === "object" && value !== null)
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}:${show(v)}`)
      .join(",")}}`;
  return String(value);
}

/** What a decoder gives for `input`: its result, or the message it throws, as text. */
function outcome(decode: (input: Uint8Array) => unknown, input: Uint8Array): string {
  try {
    return `ok ${show(decode(input))}`;
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

const item: fc.Arbitrary<RLPItem> = fc.letrec<{ item: RLPItem }>((tie) => ({
  item: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.uint8Array({ maxLength: 70 }),
    fc.uint8Array({ minLength: 1, maxLength: 1 }),
    fc.uint8Array({ minLength: 50, maxLength: 300 }),
    fc.array(tie("item"), { maxLength: 20 }),
  ),
})).item;

type Damage = readonly [at: number, byte: number, how: number];

/** `bytes` with one byte changed (0), cut short (1), extended (2) or with a byte put in (3). */
function damage(bytes: Uint8Array, [at, byte, how]: Damage): Uint8Array {
  const i = bytes.length === 0 ? 0 : at % bytes.length;
  if (how === 0) {
    const out = bytes.slice();
    if (out.length > 0) out[i] = byte;
    return out;
  }
  if (how === 1) return bytes.slice(0, i);
  const out = new Uint8Array(bytes.length + 1);
  if (how === 2) {
    out.set(bytes);
    out[bytes.length] = byte;
    return out;
  }
  out.set(bytes.subarray(0, i));
  out[i] = byte;
  out.set(bytes.subarray(i), i + 1);
  return out;
}

/**
 * An encoding and a few damaged copies of it (mostly invalid, some valid). Generating the item
 * is most of a case's cost, so each one is damaged several ways.
 */
const damaged = fc
  .tuple(
    item,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 3 })), {
      minLength: 1,
      maxLength: 8,
    }),
  )
  .map(([it, damages]) => {
    const bytes = libraryEncode(it);
    return damages.map((d) => damage(bytes, d));
  });

/** The fast decoder and the library give the same result or error for `bytes`, whole or as a stream. */
function expectLibraryOutcome(bytes: Uint8Array): void {
  const whole = outcome(decodeRlp, bytes);
  const libraryWhole = outcome(libraryDecode, bytes);
  if (whole !== libraryWhole) expect(whole).toBe(libraryWhole);
  const stream = (b: Uint8Array) => decodeRlp(b, true);
  const libraryStream = (b: Uint8Array) => libraryDecode(b, true);
  const streamed = outcome(stream, bytes);
  const libraryStreamed = outcome(libraryStream, bytes);
  if (streamed !== libraryStreamed) expect(streamed).toBe(libraryStreamed);
}

/**
 * The property tests are bounded by their number of cases; each takes 0.3 to 1.5 s on a quiet
 * 2-core machine, and a busy one (a whole `npm test` beside other work) can be ten times slower.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

describe("RLP in one pass", () => {
  it(
    "encodes as @ethereumjs/rlp does, byte for byte",
    () => {
      fc.assert(
        fc.property(item, (it) => {
          expect(show(encodeRlp(it))).toBe(show(libraryEncode(it)));
        }),
        { numRuns: 3000 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "decodes valid encodings as @ethereumjs/rlp does",
    () => {
      fc.assert(
        fc.property(item, (it) => {
          const bytes = libraryEncode(it);
          const decoded = show(decodeRlp(bytes));
          expect(decoded).toBe(show(libraryDecode(bytes)));
          expect(decoded).toBe(show(it));
        }),
        { numRuns: 3000 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers damaged encodings with the library's result or error message",
    () => {
      fc.assert(
        fc.property(damaged, (inputs) => {
          for (const bytes of inputs) expectLibraryOutcome(bytes);
        }),
        { numRuns: 2500 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers random bytes with the library's result or error message",
    () => {
      fc.assert(fc.property(fc.uint8Array({ maxLength: 80 }), expectLibraryOutcome), {
        numRuns: 10000,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it("refuses the library's edge cases with its messages", () => {
    const cases: [string, string][] = [
      ["8100", "invalid RLP encoding: invalid prefix, single byte < 0x80 are not prefixed"],
      ["b800", "invalid RLP: not enough bytes for string length"],
      ["b90000aa", "invalid RLP: extra zeros"],
      ["b837" + "00".repeat(55), "invalid RLP: expected string length to be greater than 55"],
      ["f837" + "00".repeat(55), "invalid RLP: encoded list too short"],
      ["f8ff00", "invalid RLP: total length is larger than the data"],
      ["c3c2", "invalid RLP (safeSlice): end slice of Uint8Array out-of-bounds"],
      ["0000", "invalid RLP: remainder must be zero"],
    ];
    for (const [hex, message] of cases) {
      const bytes = Uint8Array.from(Buffer.from(hex, "hex"));
      expect(() => libraryDecode(bytes)).toThrow(message);
      expect(() => decodeRlp(bytes)).toThrow(message);
    }
  });

  it("returns copies, and the input itself only for a single byte below 0x80", () => {
    const input = Uint8Array.from([0xc3, 0x82, 0x80, 0x81]);
    const out = decodeRlp(input) as Uint8Array[];
    input[2] = 0xff;
    expect(out[0]).toEqual(Uint8Array.from([0x80, 0x81]));
    const one = Uint8Array.from([0x05]);
    expect(encodeRlp(one)).toBe(one);
    expect(encodeRlp(Uint8Array.from([0x80]))).toEqual(Uint8Array.from([0x81, 0x80]));
  });

  it("hands inputs other than bytes to the library", () => {
    expect(encodeRlp(["0x0102", 5, 0n, null] as never)).toEqual(
      libraryEncode(["0x0102", 5, 0n, null]),
    );
    expect(decodeRlp("0x820102" as never)).toEqual(Uint8Array.from([1, 2]));
    expect(decodeRlp(new Uint8Array())).toEqual(new Uint8Array());
  });

  it("installs into an RLP object, keeping the library's answers", () => {
    const target = { encode: RLP.encode, decode: RLP.decode };
    expect(fastRlpInstalled(target)).toBe(false);
    installFastRlp(target);
    expect(fastRlpInstalled(target)).toBe(true);
    expect(target.decode(Uint8Array.from([0xc1, 0x01]))).toEqual([Uint8Array.from([1])]);
  });
});
