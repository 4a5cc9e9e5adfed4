import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countArrayMembers } from "../../src/json.js";

/** JSON text of `value` in one of the layouts clients send: compact, indented, padded. */
const layouts = [
  (v: unknown) => JSON.stringify(v),
  (v: unknown) => JSON.stringify(v, null, 2),
  (v: unknown) => `\r\n\t ${JSON.stringify(v, null, "\t")} \n`,
];

describe("countArrayMembers", () => {
  it("counts what JSON.parse finds in an array, for any JSON values in it", () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 20 }),
        fc.integer({ min: 0, max: layouts.length - 1 }),
        (members, layout) => {
          const text = layouts[layout]!(members);
          expect(countArrayMembers(text)).toBe((JSON.parse(text) as unknown[]).length);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("counts arrays of request-shaped objects with tricky strings", () => {
    const tricky = fc.string({
      unit: fc.constantFrom("\\", '"', "[", "]", "{", "}", ",", ":", "\n", "\u0001", " ", "a", "€"),
    });
    fc.assert(
      fc.property(
        fc.array(fc.record({ id: tricky, method: tricky, params: fc.array(tricky) })),
        (reqs) => {
          const text = JSON.stringify(reqs);
          expect(countArrayMembers(text)).toBe(reqs.length);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("answers undefined for JSON that is not an array", () => {
    fc.assert(
      fc.property(
        fc.jsonValue().filter((v) => !Array.isArray(v)),
        (value) => {
          expect(countArrayMembers(JSON.stringify(value))).toBeUndefined();
        },
      ),
      { numRuns: 1000 },
    );
  });

  it.each([
    ["[]", 0],
    [" [ ] ", 0],
    ["[[]]", 1],
    ['["a,b", "c\\"],[", {"d": [1, 2]}]', 3],
    ['["\\\\", 1]', 2],
  ])("counts %s as %i", (text, count) => {
    expect(countArrayMembers(text)).toBe(count);
  });

  it.each(["", "   ", "{}", '"["', "[1, 2", '["unterminated]'])(
    "answers undefined for %j",
    (text) => {
      expect(countArrayMembers(text)).toBeUndefined();
    },
  );
});
