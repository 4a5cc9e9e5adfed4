import { ChainErrorCode } from "@nodex/chain";
import { TraceAbortCode } from "@nodex/evm";
import { MinerErrorCode } from "@nodex/miner";
import { StateErrorCode } from "@nodex/state";
import { TxPoolErrorCode } from "@nodex/txpool";
import { CodecErrorCode, DecodeErrorCode, NodexError, TransactionErrorCode } from "@nodex/types";
import { HeavyErrorCode } from "./heavyRequests.js";
import { WalletErrorCode } from "./wallet.js";

/**
 * JSON-RPC error codes. The standard ones (-32700 … -32603) and the reference node's
 * application codes, which clients and docs of the chain already know.
 */
export const RPCErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** Geth's generic server error; also the reference node's "filter not found". */
  SERVER_ERROR: -32000,
  /** EIP-1474's "resource unavailable": the node's storage takes no writes. */
  RESOURCE_UNAVAILABLE: -32002,
  FILTER_NOT_FOUND: -32000,
  TRANSACTION_REJECTED: -32010,
  LIMIT_EXCEEDED: -32011,
  LOGS_LIMIT: -32012,
  REVERTED: -32015,
  MINING_SUBMISSION_FAILED: -33000,
} as const;
export type RPCErrorCode = (typeof RPCErrorCode)[keyof typeof RPCErrorCode];

/** An error that is answered to the client as the `error` member of a response. */
export class RPCError extends Error {
  readonly code: number;
  readonly data: string | undefined;

  constructor(code: number, message: string, data?: string) {
    super(message);
    this.name = "RPCError";
    this.code = code;
    this.data = data;
  }

  toJSON(): { code: number; message: string; data?: string } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** Every refusal of the pool is -32010 with its reason, but another chain's id is a bad parameter. */
const poolCodes = Object.fromEntries(
  Object.values(TxPoolErrorCode)
    .filter((code) => code !== TxPoolErrorCode.INVALID_OPTION)
    .map((code) => [code, RPCErrorCode.TRANSACTION_REJECTED]),
);

/**
 * Domain error codes (from any package) and the JSON-RPC code each one is answered with: the
 * one place a domain error becomes a JSON-RPC error. A code missing here is answered as -32603.
 */
const domainCodes: Readonly<Record<string, number>> = {
  [CodecErrorCode.INVALID_ARGUMENT]: RPCErrorCode.INVALID_PARAMS,
  [DecodeErrorCode.INVALID_RLP]: RPCErrorCode.INVALID_PARAMS,
  [TransactionErrorCode.TYPE_UNSUPPORTED]: RPCErrorCode.INVALID_PARAMS,
  [TransactionErrorCode.INVALID_SIGNATURE]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.STATE_MISSING]: RPCErrorCode.SERVER_ERROR,
  [StateErrorCode.ROOT_MISSING]: RPCErrorCode.SERVER_ERROR,
  [StateErrorCode.INVALID_DUMP]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.MINING_SUBMISSION]: RPCErrorCode.MINING_SUBMISSION_FAILED,
  [ChainErrorCode.UNKNOWN_BLOCK]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.NOT_CANONICAL]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.UNKNOWN_TRANSACTION]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.INVALID_RANGE]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.RANGE_BEYOND_HEAD]: RPCErrorCode.INVALID_PARAMS,
  [ChainErrorCode.LOGS_LIMIT]: RPCErrorCode.LOGS_LIMIT,
  [TraceAbortCode.DEADLINE]: RPCErrorCode.LIMIT_EXCEEDED,
  [TraceAbortCode.LIMIT]: RPCErrorCode.LIMIT_EXCEEDED,
  [HeavyErrorCode.QUEUE_FULL]: RPCErrorCode.LIMIT_EXCEEDED,
  ...poolCodes,
  [TxPoolErrorCode.CHAIN_ID_MISMATCH]: RPCErrorCode.INVALID_PARAMS,
  // The disk, not the transaction: the same transaction is taken once writes land again.
  [TxPoolErrorCode.JOURNAL_WRITE_FAILED]: RPCErrorCode.RESOURCE_UNAVAILABLE,
  [StateErrorCode.STORAGE_UNAVAILABLE]: RPCErrorCode.RESOURCE_UNAVAILABLE,
  // A fork's upstream: down (every endpoint tried) or refusing what the fork asked of it.
  [StateErrorCode.UPSTREAM_UNAVAILABLE]: RPCErrorCode.RESOURCE_UNAVAILABLE,
  [StateErrorCode.UPSTREAM_CLOSED]: RPCErrorCode.RESOURCE_UNAVAILABLE,
  [StateErrorCode.UPSTREAM_ERROR]: RPCErrorCode.SERVER_ERROR,
  // The upstream answered, but not with the fork block's state (its message names the upstream,
  // the account or slot and what differed), or a node it holds cannot be reached: nothing of
  // it was kept, and the same read is asked again next time.
  [StateErrorCode.FORK_UNVERIFIED]: RPCErrorCode.SERVER_ERROR,
  [StateErrorCode.FORK_NODE_UNAVAILABLE]: RPCErrorCode.SERVER_ERROR,
  [MinerErrorCode.NOT_SUPPORTED]: RPCErrorCode.SERVER_ERROR,
  [MinerErrorCode.INVALID_TIMESTAMP]: RPCErrorCode.INVALID_PARAMS,
  [MinerErrorCode.INVALID_ARGUMENT]: RPCErrorCode.INVALID_PARAMS,
  [MinerErrorCode.NOT_IMPERSONATED]: RPCErrorCode.SERVER_ERROR,
  [ChainErrorCode.NOT_SUPPORTED]: RPCErrorCode.SERVER_ERROR,
  [MinerErrorCode.TRANSACTION_REJECTED]: RPCErrorCode.TRANSACTION_REJECTED,
  [MinerErrorCode.TRANSACTION_REVERTED]: RPCErrorCode.REVERTED,
  // Wallet failures: geth's -32000 (unknown, locked accounts, wrong passphrase, unreadable file).
  [WalletErrorCode.UNKNOWN_ACCOUNT]: RPCErrorCode.SERVER_ERROR,
  [WalletErrorCode.LOCKED]: RPCErrorCode.SERVER_ERROR,
  [WalletErrorCode.WRONG_PASSPHRASE]: RPCErrorCode.SERVER_ERROR,
  [WalletErrorCode.KEYSTORE]: RPCErrorCode.SERVER_ERROR,
  [WalletErrorCode.INVALID_KEY]: RPCErrorCode.INVALID_PARAMS,
  [WalletErrorCode.INVALID_TYPED_DATA]: RPCErrorCode.INVALID_PARAMS,
};

/**
 * Maps anything a handler threw to the error the client sees. Domain errors keep their
 * message; anything unknown becomes -32603 `internal error`, with no stack or path in it.
 */
export function toRPCError(err: unknown): RPCError {
  if (err instanceof RPCError) return err;
  if (err instanceof NodexError) {
    const code = domainCodes[err.code];
    // A revert's return data goes with it, as `eth_call`'s does.
    const data = code === RPCErrorCode.REVERTED ? err.meta.data : undefined;
    if (code !== undefined)
      return new RPCError(code, err.message, typeof data === "string" ? data : undefined);
  }
  return new RPCError(RPCErrorCode.INTERNAL_ERROR, "internal error");
}

/** True when `toRPCError` would hide the error's details (the caller should log it). */
export function isUnexpectedError(err: unknown): boolean {
  if (err instanceof RPCError) return false;
  return !(err instanceof NodexError && domainCodes[err.code] !== undefined);
}

export function invalidParams(message: string): RPCError {
  return new RPCError(RPCErrorCode.INVALID_PARAMS, message);
}

export function invalidRequest(message: string): RPCError {
  return new RPCError(RPCErrorCode.INVALID_REQUEST, message);
}
