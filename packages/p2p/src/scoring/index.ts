export { type AddressBlock, AddressSet, normalizeAddress, parseAddressBlock } from "./addresses.js";
export { loadBans, saveBans } from "./banStore.js";
export {
  ADDRESS_PUNISHMENT,
  type BanState,
  NODE_PUNISHMENT,
  PeerEvent,
  PeerScoring,
  type PeerScoringOptions,
  type PunishmentParams,
  punishmentDuration,
  type ScoreOutcome,
} from "./peerScoring.js";
