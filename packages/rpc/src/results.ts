import { bytesToHex, encodeQuantity } from "@nodex/types";

/** Turns a handler's value into the JSON `result` member. Only encoders format hex. */
export type ResultEncoder<T> = (value: T) => unknown;

const identity = <T>(value: T): T => value;

/**
 * A result already serialized: the dispatcher puts `text` in the response as it is. For results
 * built from cached pieces of JSON (the logs of a block never change). `text` may be the JSON's
 * UTF-8 bytes (large answers made on a worker thread come as bytes: see `formatLogsJsonBytes`);
 * `ownBuffer` says that the buffer around them is theirs alone, so that the bytes free in it
 * before and after them may take the response's head and its closing brace.
 */
export class RawJson {
  readonly text: string | Uint8Array;
  readonly ownBuffer: boolean;

  constructor(text: string | Uint8Array, opts: { readonly ownBuffer?: boolean } = {}) {
    this.text = text;
    this.ownBuffer = opts.ownBuffer === true && typeof text !== "string";
  }
}

/** Result encoders for the value types of the spec. */
export const r = {
  quantity: ((value: bigint | number) => encodeQuantity(value)) as ResultEncoder<bigint | number>,
  data: ((value: Uint8Array) => bytesToHex(value)) as ResultEncoder<Uint8Array>,
  boolean: identity as ResultEncoder<boolean>,
  string: identity as ResultEncoder<string>,
  /** A value that already has its JSON form. */
  json: identity as ResultEncoder<unknown>,
  /** Text that is already JSON. */
  raw: identity as ResultEncoder<RawJson>,

  array<T>(item: ResultEncoder<T>): ResultEncoder<readonly T[]> {
    return (values) => values.map(item);
  },
  nullable<T>(inner: ResultEncoder<T>): ResultEncoder<T | null> {
    return (value) => (value === null ? null : inner(value));
  },
} as const;
