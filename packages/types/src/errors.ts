/** Base of every domain error: a stable `code`, a message for people, and context for logs. */
export class NodexError<C extends string = string> extends Error {
  readonly code: C;
  readonly meta: Readonly<Record<string, unknown>>;

  constructor(
    code: C,
    message: string,
    meta: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "NodexError";
    this.code = code;
    this.meta = Object.freeze({ ...meta });
  }
}

export const CodecErrorCode = { INVALID_ARGUMENT: "CODEC_INVALID_ARGUMENT" } as const;

/** A malformed value in positional parameter `argument`. */
export class CodecError extends NodexError<typeof CodecErrorCode.INVALID_ARGUMENT> {
  readonly argument: number;
  readonly reason: string;

  constructor(argument: number, reason: string) {
    super(CodecErrorCode.INVALID_ARGUMENT, `invalid argument ${argument}: ${reason}`, {
      argument,
      reason,
    });
    this.name = "CodecError";
    this.argument = argument;
    this.reason = reason;
  }
}
