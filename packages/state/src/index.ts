export { AccountReader } from "./accountReader.js";
export { Bucket, bucketKey } from "./db/buckets.js";
export {
  Database,
  type DatabaseOpenOptions,
  type ReopenHooks,
  type StorageHealth,
  type WriteFaults,
  type WriteOp,
} from "./db/database.js";
export { StorageMonitor, type StorageMonitorOptions } from "./db/storageMonitor.js";
export { StateError, StateErrorCode } from "./errors.js";
export { useFastRlp, usingFastRlp } from "./fastRlp.js";
export { redactUrl } from "./fork/endpoint.js";
export {
  DEFAULT_FORK_SEARCH_LIMIT,
  type ForkEntries,
  ForkSource,
  type ForkSourceOptions,
  type ForkStats,
} from "./fork/forkSource.js";
export {
  Upstream,
  type UpstreamCall,
  type UpstreamParams,
  type UpstreamResult,
  type UpstreamStats,
  type UpstreamUrlStats,
} from "./fork/upstream.js";
export type { UpstreamCalls } from "./fork/upstreamCalls.js";
export {
  defaultUpstreamOptions,
  type UpstreamDeps,
  type UpstreamLogger,
  type UpstreamOptions,
} from "./fork/upstreamOptions.js";
export {
  DEFAULT_TRIE_NODE_CACHE,
  NodeCache,
  TRIE_NODE_CACHE_BYTES_PER_NODE,
  trieNodeCost,
} from "./nodeCache.js";
export { NodeStore, type NodeStoreOptions } from "./nodeStore.js";
export { orderedTrieProof, orderedTrieRoot } from "./orderedTrie.js";
export { type PruneResult, pruneTrieNodes } from "./pruner.js";
export { quietLibraryDebug } from "./quietDebug.js";
export {
  decodeStateFile,
  dumpState,
  encodeStateFile,
  type StateDump,
  type StateFile,
  stateDumpWrites,
} from "./stateDump.js";
export { codeKey, readStateItems, type StateItemRef } from "./stateItems.js";
export {
  type DeliverResult,
  type StateItem,
  type StateItemKind,
  StateSync,
  type StateSyncProgress,
} from "./sync/stateSync.js";
export { type AccountState, EMPTY_TRIE_ROOT, type StateProof, WorldState } from "./worldState.js";
