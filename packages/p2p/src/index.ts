import "./polyfills.js";

export {
  type BlockBody,
  type ChainHead,
  type ChainSource,
  chainSourceOf,
  type StateItemKey,
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
  blockTopic,
  Gossip,
  type GossipChain,
  type GossipDeps,
  type GossipPool,
  messageId,
  transactionTopic,
} from "./gossip.js";
export {
  type ConnectionFailure,
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
  MAX_STATE_ITEMS_PER_REQUEST,
  MAX_STATE_RESPONSE_BYTES,
  Protocol,
  protocolId,
  REQUEST_PROTOCOLS,
  RESPONSE_SOFT_BYTES,
  type RequestProtocol,
  type RequestTypes,
  ResultCode,
  StateItemKind,
} from "./protocols.js";
export { RateLimiter } from "./rateLimiter.js";
export {
  ADDRESS_PUNISHMENT,
  type BanState,
  FAILED_CONNECTION_LIMIT,
  type FailedConnectionLimit,
  type FailedConnectionOutcome,
  FailureWindow,
  loadBans,
  MAX_ADDRESS_RECORDS,
  NODE_PUNISHMENT,
  PeerEvent,
  PeerScoring,
  type PeerScoringOptions,
  type PunishmentParams,
  parseAddressBlock,
  punishmentDuration,
  type ScoreOutcome,
  saveBans,
} from "./scoring/index.js";
export {
  BANS_FILE,
  gossipService,
  P2PService,
  type P2PServiceDeps,
  type SealCheck,
  shortPeerId,
} from "./service.js";
export {
  DEFAULT_SNAP_SYNC_OPTIONS,
  type SnapChain,
  type SnapDelivery,
  type SnapHeader,
  type SnapNetwork,
  type SnapPhase,
  type SnapProgress,
  type SnapResult,
  type SnapStateItem,
  type SnapStateProgress,
  type SnapStateSync,
  SnapSync,
  type SnapSyncOptions,
} from "./snapSync.js";
export { decodeStatus, encodeStatus, type Status, statusMismatch } from "./status.js";
export {
  DEFAULT_SYNC_OPTIONS,
  type PeerReport,
  type SnapSyncProgress,
  type SyncChain,
  Synchronizer,
  type SyncNetwork,
  type SyncOptions,
  type SyncProgress,
} from "./sync.js";
