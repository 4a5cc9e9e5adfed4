import { NodexError } from "@nodex/types";

/** Failures of the node's wallet (`eth_sign`, `eth_sendTransaction`, `personal_*`). */
export const WalletErrorCode = {
  /** The address is not an account of this node. */
  UNKNOWN_ACCOUNT: "WALLET_UNKNOWN_ACCOUNT",
  /** The account exists but is locked. */
  LOCKED: "WALLET_ACCOUNT_LOCKED",
  /** The passphrase does not decrypt the account's key. */
  WRONG_PASSPHRASE: "WALLET_WRONG_PASSPHRASE",
  /** A private key that is not 32 bytes of a valid secp256k1 secret. */
  INVALID_KEY: "WALLET_INVALID_KEY",
  /** The key file of the account cannot be read or is not a valid keystore file. */
  KEYSTORE: "WALLET_KEYSTORE",
  /** EIP-712 typed data whose types and values do not fit together. */
  INVALID_TYPED_DATA: "WALLET_INVALID_TYPED_DATA",
} as const;
export type WalletErrorCode = (typeof WalletErrorCode)[keyof typeof WalletErrorCode];

/** A wallet failure; its message never contains a key or a passphrase. */
export class WalletError extends NodexError<WalletErrorCode> {
  constructor(code: WalletErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "WalletError";
  }
}

/** One field of an EIP-712 struct type. */
export interface TypedDataField {
  readonly name: string;
  readonly type: string;
}

/** `eth_signTypedData_v4`'s EIP-712 object, its shape checked (its values are checked when hashed). */
export interface TypedData {
  readonly types: Readonly<Record<string, readonly TypedDataField[]>>;
  readonly primaryType: string;
  readonly domain: Readonly<Record<string, unknown>>;
  readonly message: Readonly<Record<string, unknown>>;
}
