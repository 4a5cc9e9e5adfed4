export { type AddressBlock, AddressSet, normalizeAddress, parseAddressBlock } from "./addresses.js";
export { loadBans, saveBans } from "./banStore.js";
export { FailureWindow } from "./failureWindow.js";
export {
  ADDRESS_PUNISHMENT,
  type BanState,
  FAILED_CONNECTION_LIMIT,
  type FailedConnectionLimit,
  type FailedConnectionOutcome,
  MAX_ADDRESS_RECORDS,
  NODE_PUNISHMENT,
  PeerEvent,
  PeerScoring,
  type PeerScoringOptions,
  type PunishmentParams,
  punishmentDuration,
  type ScoreOutcome,
} from "./peerScoring.js";
