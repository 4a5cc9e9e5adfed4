export {
  type AuthFailure,
  HostedAccess,
  type HostedAccessOptions,
  keyScope,
  LIMIT_EXCEEDED_CODE,
  type Principal,
  RequestGuard,
} from "./access.js";
export {
  type AccessLogSink,
  type AccessRecord,
  MAX_LOGGED_METHODS,
} from "./accessLog.js";
export type {
  CallGuard,
  DispatcherOptions,
  DispatchNotes,
  DispatchOutput,
  RequestId,
} from "./dispatcher.js";
export { Dispatcher, errorResponse } from "./dispatcher.js";
export { isUnexpectedError, RPCError, RPCErrorCode, toRPCError } from "./errors.js";
export {
  DEFAULT_FILTER_OPTIONS,
  type FilterChanges,
  FilterManager,
  type FilterOptions,
  type FilterService,
  type LogChange,
} from "./filters.js";
export { type ForkHistory, Forwarded, routeForkHistory } from "./forkHistory.js";
export {
  HeavyErrorCode,
  type HeavyRequest,
  HeavyRequestError,
  type HeavyRequestService,
  type TraceBudget,
  traceBudget,
} from "./heavyRequests.js";
export {
  decodeHeavyFailure,
  encodeHeavyFailure,
  type HeavyFailure,
  type HeavyWorkDeps,
  serveHeavyRequest,
} from "./heavyWork.js";
export type {
  HealthReport,
  HttpAppOptions,
  HttpReply,
  HttpRequestHead,
  ReadinessReport,
} from "./http/app.js";
export { HttpApp } from "./http/app.js";
export { chooseTransport } from "./http/index.js";
export { createNodeHttpTransport } from "./http/nodeHttp.js";
export type { HttpTransport, HttpTransportFactory } from "./http/transport.js";
export {
  API_KEY_PATTERN,
  type ApiKeyRecord,
  CombinedKeyStore,
  hashKey,
  KEY_FILE_POLL_MS,
  KeyFileError,
  type KeyPolicy,
  type KeyRegistry,
  type KeyStore,
  keyRegistryPath,
  keyUsagePath,
  newApiKey,
  newKeyId,
  parseKeyFile,
  parseKeyRegistry,
  readKeyRegistry,
  StaticKeyStore,
  updateKeyRegistry,
  WatchedKeyFile,
  writeFileAtomic,
} from "./keys.js";
export {
  DEFAULT_METHOD_WEIGHT,
  DEFAULT_METHOD_WEIGHTS,
  type LimitRefusal,
  type LimitStore,
  type Limits,
  MemoryLimitStore,
  readUsageFile,
  type ScopeUsage,
  TokenBucket,
  utcDay,
  writeUsageFile,
} from "./limits.js";
export { type MethodClass, methodClass } from "./methodClass.js";
export {
  type GaugeReader,
  NO_KEY,
  NodeMetrics,
  outcomeOf,
  type RequestMetrics,
} from "./metrics.js";
export { createMetricsServer, type MetricsServer } from "./metricsServer.js";
export { parseTraceConfig, type TraceConfig, type TraceLimits } from "./modules/debug.js";
export { PROTOCOL_VERSION } from "./modules/nodex.js";
export { MAX_TRACES_PER_REQUEST, parseTraceFilter, type TraceFilter } from "./modules/trace.js";
export {
  DEFAULT_READY_OPTIONS,
  defaultRPCOptions,
  HOSTED_DEFAULT_TIMEOUT_MS,
  HOSTED_OFF_METHODS,
  HOSTED_OFF_MODULES,
  HTTP_LAYERS,
  type HttpLayer,
  type ReadyOptions,
  type RPCOptions,
} from "./options.js";
export type { AnyParamSpec, ParamSpec, ParamValues } from "./params.js";
export { decodeParams, p } from "./params.js";
export type {
  AnyMethodSpec,
  Lookup,
  MethodSpec,
  ModuleDefinition,
  RegisteredMethod,
  RegistryOptions,
} from "./registry.js";
export { defineModule, MethodRegistry, method, OTHER_METHOD } from "./registry.js";
export type { ResultEncoder } from "./results.js";
export { RawJson, r } from "./results.js";
export type { RPCServer, RPCServerDeps } from "./server.js";
export { createRPCServer, readinessOf } from "./server.js";
export type {
  AccountsView,
  CallContext,
  ChainReaderService,
  ChainView,
  DevControls,
  EthWork,
  MinerService,
  MinerWork,
  MiningView,
  NodeEvents,
  PeersView,
  PoolView,
  RPCServices,
  ScoringRecord,
  ScoringView,
  SnapSyncStatus,
  StateView,
  SubmittedBlockInfo,
  SubscriptionHost,
  SubscriptionKind,
  SubscriptionRequest,
  SyncStatus,
  TracingService,
  TransactionService,
  WalletService,
} from "./services.js";
export { hostedOwner } from "./services.js";
export { FILTER_TRAIL_BLOCKS, MAX_TRAIL_LOGS, SharedFilterManager } from "./shared/filters.js";
export {
  createSharedKey,
  KEY_CHANNEL,
  KEY_RECORDS,
  KEY_REVOCATIONS,
  readSharedKeys,
  revokeSharedKey,
  SHARED_KEYS_GRACE_MS,
  SHARED_KEYS_RELOAD_MS,
  SharedKeyStore,
} from "./shared/keys.js";
export {
  LIMITS_FLUSH_MS,
  LIMITS_GRACE_MS,
  LIMITS_LAST_USED,
  limitCounter,
  readSharedUsage,
  SharedLimitStore,
} from "./shared/limits.js";
export {
  RedisStore,
  type RedisStoreOptions,
  redactRedisUrl,
  redisUrlProblem,
  type SharedScript,
  type SharedStore,
} from "./shared/redis.js";
export {
  DEFAULT_SUBSCRIPTION_OPTIONS,
  type NotificationSink,
  SUBSCRIPTION_ALIASES,
  SubscriptionManager,
  type SubscriptionOptions,
} from "./subscriptions.js";
export { type TypedData, type TypedDataField, WalletError, WalletErrorCode } from "./wallet.js";
export { DEFAULT_WS_OPTIONS, WsHub, type WsOptions } from "./ws/hub.js";
export { WsSession, type WsSocket } from "./ws/session.js";
