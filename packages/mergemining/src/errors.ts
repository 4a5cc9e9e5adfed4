import { NodexError } from "@nodex/types";

/** Codes of the errors this package throws (parsers and builders; verification returns a result). */
export const MergeMiningErrorCode = {
  /** Bytes that are not the Bitcoin structure asked for (short, trailing bytes, bad varint). */
  MALFORMED: "MERGEMINING_MALFORMED",
  /** An argument outside its domain (negative difficulty, wrong hash length, empty list). */
  INVALID_ARGUMENT: "MERGEMINING_INVALID_ARGUMENT",
  /** A coinbase without the `RSKBLOCK:` tag where one is required. */
  TAG_MISSING: "MERGEMINING_TAG_MISSING",
  /** Grinding gave up: the nonce and extra-nonce budget was spent without meeting the target. */
  WORK_EXHAUSTED: "MERGEMINING_WORK_EXHAUSTED",
} as const;
export type MergeMiningErrorCode = (typeof MergeMiningErrorCode)[keyof typeof MergeMiningErrorCode];

export class MergeMiningError extends NodexError<MergeMiningErrorCode> {
  constructor(code: MergeMiningErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "MergeMiningError";
  }
}

export function malformed(message: string, meta: Record<string, unknown> = {}): MergeMiningError {
  return new MergeMiningError(MergeMiningErrorCode.MALFORMED, message, meta);
}

export function invalidArgument(
  message: string,
  meta: Record<string, unknown> = {},
): MergeMiningError {
  return new MergeMiningError(MergeMiningErrorCode.INVALID_ARGUMENT, message, meta);
}
