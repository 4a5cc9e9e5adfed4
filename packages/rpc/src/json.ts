/** The JSON type of a decoded value, for error messages: null, array, object, string, ... */
export function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * The number of top-level members of a JSON array, counted without parsing it: `undefined`
 * when `text` is not an array (its first character after whitespace is not `[`) or the array
 * does not close. Strings (with their escapes) and nested arrays and objects are skipped, so
 * for valid JSON the count equals `JSON.parse(text).length`; for invalid JSON it is only an
 * estimate, which is all a limit needs before the parse refuses the text anyway.
 */
export function countArrayMembers(text: string): number | undefined {
  const n = text.length;
  let i = 0;
  while (i < n && isJsonSpace(text.charCodeAt(i))) i++;
  if (i === n || text.charCodeAt(i) !== 0x5b) return undefined;
  let depth = 0;
  let commas = 0;
  let empty = true;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: on to its closing quote, the first not escaped by an odd run of backslashes.
      empty = false;
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i === -1) return undefined;
        let slashes = 0;
        while (text.charCodeAt(i - 1 - slashes) === 0x5c) slashes++;
        if (slashes % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (depth > 0) empty = false;
      depth++;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
      if (depth === 0) return empty ? 0 : commas + 1;
    } else if (c === 0x2c) {
      if (depth === 1) commas++;
    } else if (!isJsonSpace(c)) {
      empty = false;
    }
  }
  return undefined;
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
