import { format } from "node:util";
import { bytesToHex, keccak256 } from "@nodex/types";

/**
 * Hardhat's `console.sol`: contracts call this address (the bytes of "console.log") with the
 * ABI encoding of `log(...)`, `logUint(...)`, … and development nodes print what they are given.
 * There is no code there: the call costs and answers what a call to an empty account does.
 */
export const CONSOLE_ADDRESS = "0x000000000000000000636f6e736f6c652e6c6f67" as const;

/** `CONSOLE_ADDRESS` as 40 hex digits, the interpreter's key of an address. */
export const CONSOLE_ADDRESS_KEY = CONSOLE_ADDRESS.slice(2);

/** What one call to the console address says: a message, or a note when it cannot be read. */
export type ConsoleLine =
  | { readonly kind: "message"; readonly text: string }
  | { readonly kind: "note"; readonly text: string };

/** The parameter types of `console.sol`, as the ABI names them. */
type ParamType = "uint256" | "int256" | "string" | "bool" | "address" | "bytes" | `bytes${number}`;

/** The types `log` takes in any order, one to four of them. */
const LOG_TYPES: readonly ParamType[] = ["uint256", "string", "bool", "address"];

/** The fixed-size byte arrays of `logBytes1` … `logBytes32`. */
const FIXED_BYTES: readonly ParamType[] = Array.from(
  { length: 32 },
  (_, i) => `bytes${i + 1}` as ParamType,
);

/** Every function of `console.sol`, as name and parameter types. */
function consoleFunctions(): [name: string, types: readonly ParamType[]][] {
  const functions: [string, readonly ParamType[]][] = [["log", []]];
  // The single-type functions, and `log` of one argument of each type.
  const single: [string, ParamType][] = [
    ["logInt", "int256"],
    ["logUint", "uint256"],
    ["logString", "string"],
    ["logBool", "bool"],
    ["logAddress", "address"],
    ["logBytes", "bytes"],
    ...FIXED_BYTES.map((t): [string, ParamType] => [`logBytes${t.slice(5)}`, t]),
  ];
  for (const [name, type] of single) functions.push([name, [type]]);
  for (const type of ["uint256", "int256", "string", "bool", "address", "bytes"] as const)
    functions.push(["log", [type]]);
  // `log` of two to four arguments, each one of LOG_TYPES.
  let combos: ParamType[][] = [[]];
  for (let arity = 1; arity <= 4; arity++) {
    combos = combos.flatMap((prefix) => LOG_TYPES.map((t) => [...prefix, t]));
    if (arity >= 2) for (const types of combos) functions.push(["log", types]);
  }
  return functions;
}

let selectors: Map<number, readonly ParamType[]> | undefined;

/**
 * The table from selector to parameter types, made from the signatures on first use. Each
 * signature's selector is also computed with `uint` and `int` for `uint256` and `int256`: the
 * first versions of `console.sol` were compiled with those names, and their selectors differ.
 */
function selectorTable(): Map<number, readonly ParamType[]> {
  if (selectors !== undefined) return selectors;
  const table = new Map<number, readonly ParamType[]>();
  const add = (signature: string, types: readonly ParamType[]) => {
    const hash = keccak256(new TextEncoder().encode(signature));
    const selector = ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0;
    if (!table.has(selector)) table.set(selector, types);
  };
  for (const [name, types] of consoleFunctions()) {
    const signature = `${name}(${types.join(",")})`;
    add(signature, types);
    const old = `${name}(${types.map((t) => (t === "uint256" ? "uint" : t === "int256" ? "int" : t)).join(",")})`;
    if (old !== signature) add(old, types);
  }
  selectors = table;
  return table;
}

/** How many selectors the table knows (its size, for tests). */
export function consoleSelectorCount(): number {
  return selectorTable().size;
}

class Malformed extends Error {}

const WORD = 32;
const utf8 = new TextDecoder();

function word(args: Uint8Array, at: number): Uint8Array {
  if (at + WORD > args.length) throw new Malformed(`argument word at ${at} past the data`);
  return args.subarray(at, at + WORD);
}

function wordValue(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/** A word read as an offset or a length: small enough to index the data. */
function wordIndex(bytes: Uint8Array, what: string): number {
  const value = wordValue(bytes);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new Malformed(`${what} ${value} too large`);
  return Number(value);
}

/** The bytes of a dynamic argument (`string`, `bytes`) whose head word is at `at`. */
function dynamic(args: Uint8Array, at: number): Uint8Array {
  const offset = wordIndex(word(args, at), "offset");
  const length = wordIndex(word(args, offset), "length");
  const start = offset + WORD;
  if (start + length > args.length)
    throw new Malformed(`${length} bytes at ${start} past the data (${args.length} bytes)`);
  return args.subarray(start, start + length);
}

/** One argument as the text Hardhat gives it to `util.format`. */
function decodeArgument(args: Uint8Array, index: number, type: ParamType): string {
  const at = index * WORD;
  switch (type) {
    case "uint256":
      return wordValue(word(args, at)).toString(10);
    case "int256":
      return BigInt.asIntN(256, wordValue(word(args, at))).toString(10);
    case "bool": {
      const value = wordValue(word(args, at));
      if (value > 1n) throw new Malformed(`bool argument ${index} is ${value}`);
      return value === 1n ? "true" : "false";
    }
    case "address": {
      const bytes = word(args, at);
      if (bytes.subarray(0, 12).some((b) => b !== 0))
        throw new Malformed(`address argument ${index} has more than 20 bytes`);
      return bytesToHex(bytes.subarray(12));
    }
    case "string":
      return utf8.decode(dynamic(args, at));
    case "bytes":
      return bytesToHex(dynamic(args, at));
    default: {
      // bytes1 … bytes32: left-aligned in the word, the rest zero.
      const size = Number(type.slice(5));
      const bytes = word(args, at);
      if (bytes.subarray(size).some((b) => b !== 0))
        throw new Malformed(`${type} argument ${index} has more than ${size} bytes`);
      return bytesToHex(bytes.subarray(0, size));
    }
  }
}

/**
 * `%d` and `%i` not escaped by a `%` become `%s`: the arguments are decimal texts, which
 * `util.format` would read as JavaScript numbers (losing digits past 2⁵³).
 */
function numbersAsText(first: string): string {
  return first.replace(/((?<!%)(?:%%)*)(%[di])/g, "$1%s");
}

/**
 * What a call to `console.sol`'s address with `data` (selector and arguments) prints, as
 * Hardhat's node prints it: the arguments decoded to text (numbers in decimal, addresses and
 * bytes in hex), the first one a format string for the others (`%s`, `%d`, `%i`, `%o`, … of
 * Node's `util.format`), the ones left over after it, separated by spaces. Data that does not
 * decode (an unknown selector, an argument past the end of the data, a `bool` other than 0 or
 * 1, …) answers a note that says what is wrong; this never throws.
 */
export function decodeConsoleLog(data: Uint8Array): ConsoleLine {
  if (data.length < 4)
    return { kind: "note", text: `console.log call without a selector: ${bytesToHex(data)}` };
  const selector = ((data[0]! << 24) | (data[1]! << 16) | (data[2]! << 8) | data[3]!) >>> 0;
  const types = selectorTable().get(selector);
  if (types === undefined)
    return {
      kind: "note",
      text: `console.log call with an unknown selector ${bytesToHex(data.subarray(0, 4))}`,
    };
  const args = data.subarray(4);
  try {
    const decoded = types.map((type, i) => decodeArgument(args, i, type));
    if (decoded.length > 0) decoded[0] = numbersAsText(decoded[0]!);
    return { kind: "message", text: format(...decoded) };
  } catch (err) {
    const reason = err instanceof Malformed ? err.message : String(err);
    return {
      kind: "note",
      text: `console.log(${types.join(",")}) call with malformed arguments: ${reason}`,
    };
  }
}
