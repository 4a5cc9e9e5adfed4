import "./polyfills.js";

export {
  type BlockBody,
  type ChainHead,
  type ChainSource,
  chainSourceOf,
} from "./chainSource.js";
export { P2PError, P2PErrorCode } from "./errors.js";
export {
  encodeFrame,
  encodeVarint,
  type FrameIOOptions,
  FrameReader,
  MAX_LENGTH_PREFIX_BYTES,
  writeFrame,
} from "./framing.js";
export {
  P2PNetwork,
  type P2PNetworkDeps,
  type PeerFault,
  type PeerInfo,
  type RequestOptions,
} from "./network.js";
export { NODE_KEY_FILE, NodeKey } from "./nodeKey.js";
export { defaultP2POptions, type P2POptions } from "./options.js";
export {
  FRAME_CAPS,
  type HeadersByRange,
  MAX_BODIES_PER_REQUEST,
  MAX_HEADERS_PER_REQUEST,
  MAX_RECEIPTS_PER_REQUEST,
  Protocol,
  protocolId,
  REQUEST_PROTOCOLS,
  RESPONSE_SOFT_BYTES,
  type RequestProtocol,
  type RequestTypes,
  ResultCode,
} from "./protocols.js";
export { RateLimiter } from "./rateLimiter.js";
export { decodeStatus, encodeStatus, type Status, statusMismatch } from "./status.js";
