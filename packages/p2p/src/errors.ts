import { NodexError } from "@nodex/types";

export const P2PErrorCode = {
  /** The node key file is readable by others than its owner (mode wider than 600). */
  KEY_PERMISSIONS: "P2P_KEY_PERMISSIONS",
  /** The node key file does not hold a private key. */
  KEY_CORRUPT: "P2P_KEY_CORRUPT",
  /** A frame whose declared length is over the protocol's cap. */
  FRAME_TOO_LARGE: "P2P_FRAME_TOO_LARGE",
  /** A frame that cannot be read: a bad length prefix, or the stream ended inside a frame. */
  FRAME_MALFORMED: "P2P_FRAME_MALFORMED",
  /** The stream was reset or closed before the exchange was complete. */
  STREAM_CLOSED: "P2P_STREAM_CLOSED",
  /** The peer did not answer in time. */
  TIMEOUT: "P2P_TIMEOUT",
  /** A request the peer sent that breaks the protocol (undecodable, over its limits). */
  INVALID_REQUEST: "P2P_INVALID_REQUEST",
  /** A response that breaks the protocol (undecodable, more items than asked, not what was asked). */
  INVALID_RESPONSE: "P2P_INVALID_RESPONSE",
  /** The peer refused a request because its sender went over the rate limit. */
  RATE_LIMITED: "P2P_RATE_LIMITED",
  /** The peer answered a request with an error of its own. */
  REMOTE_ERROR: "P2P_REMOTE_ERROR",
  /** No connected peer with that id (or its handshake is not done). */
  UNKNOWN_PEER: "P2P_UNKNOWN_PEER",
  /** A peer on another network or with another genesis block. */
  STATUS_MISMATCH: "P2P_STATUS_MISMATCH",
  /** The network is not started, or already stopped. */
  NOT_RUNNING: "P2P_NOT_RUNNING",
  /** A request this node abandoned (its signal aborted): not the peer's fault. */
  ABORTED: "P2P_ABORTED",
  /** A dial that did not lead to a connection. */
  DIAL_FAILED: "P2P_DIAL_FAILED",
} as const;
export type P2PErrorCode = (typeof P2PErrorCode)[keyof typeof P2PErrorCode];

export class P2PError extends NodexError<P2PErrorCode> {
  constructor(
    code: P2PErrorCode,
    message: string,
    meta: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, meta, options);
    this.name = "P2PError";
  }
}
