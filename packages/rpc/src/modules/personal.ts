import { type Address, CodecError, hexToBytes, parseQuantity } from "@nodex/types";
import { jsonType, type ParamSpec, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { WalletService } from "../services.js";
import { noKeysWhenHosted, sendFromWallet, sendRequest, type WalletNode } from "./ethAccounts.js";

/** How long `personal_unlockAccount` unlocks when no duration is given, in seconds (geth's). */
export const DEFAULT_UNLOCK_SECONDS = 300;

/** Seconds as a JSON number (web3.js, geth) or a QUANTITY; 0 unlocks until the node stops. */
function parseSeconds(value: unknown, arg: number): number {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new CodecError(arg, "duration: expected a non-negative whole number of seconds");
    return value;
  }
  if (typeof value === "string") return Number(parseQuantity(value, arg, { maxBits: 40 }));
  throw new CodecError(arg, `duration: expected seconds as a number, got ${jsonType(value)}`);
}

/** A private key as hex, with or without `0x` (geth and the reference take both). */
function parsePrivateKey(value: unknown, arg: number): Uint8Array {
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a hex private key, got ${jsonType(value)}`);
  // The value is a key: never quote it back.
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(value))
    throw new CodecError(arg, "a private key is 32 bytes as 64 hex digits");
  return hexToBytes(value);
}

const seconds: ParamSpec<number> = {
  name: "duration",
  parse: parseSeconds,
  optional: true,
  defaultValue: DEFAULT_UNLOCK_SECONDS,
};
const privateKey: ParamSpec<Uint8Array> = {
  name: "key",
  parse: parsePrivateKey,
  optional: false,
  defaultValue: undefined,
};

const addresses = (list: readonly Address[]) => list.map(r.data);

/** The `personal_` module: the node's accounts and their keystore. */
export function personalModule(wallet: WalletService, node: WalletNode | undefined) {
  return defineModule("personal", {
    listAccounts: method({
      params: [],
      result: addresses,
      handler: (_s, _args, { hosted }) => (hosted ? [] : wallet.list()),
    }),
    newAccount: method({
      params: [p.string],
      result: r.data,
      handler: (_s, [passphrase]) => wallet.newAccount(passphrase),
    }),
    importRawKey: method({
      params: [privateKey, p.string],
      result: r.data,
      handler: (_s, [key, passphrase]) => wallet.importRawKey(key, passphrase),
    }),
    newAccountWithSeed: method({
      params: [p.string],
      result: r.data,
      handler: (_s, [seed]) => wallet.newAccountWithSeed(seed),
    }),
    unlockAccount: method({
      params: [p.address, p.string, seconds],
      result: r.boolean,
      handler: (_s, [address, passphrase, duration]) =>
        wallet.unlock(address, passphrase, duration),
    }),
    lockAccount: method({
      params: [p.address],
      result: r.boolean,
      handler: (_s, [address]) => wallet.lock(address),
    }),
    // Geth's order, the reverse of eth_sign's: the data, then the account (and its passphrase,
    // for this call only); the same EIP-191 signature as eth_sign.
    sign: method({
      params: [p.data, p.address, p.optional<string | undefined>(p.string, undefined)],
      result: r.data,
      handler: (_s, [message, address, passphrase], { hosted }) => {
        noKeysWhenHosted(hosted, address);
        return wallet.signMessageWith(address, message, passphrase);
      },
    }),
    dumpRawKey: method({
      params: [p.address],
      result: r.data,
      handler: (_s, [address], { hosted }) => {
        noKeysWhenHosted(hosted, address);
        return wallet.dumpRawKey(address);
      },
    }),
    ...(node === undefined
      ? {}
      : {
          sendTransaction: method({
            params: [sendRequest, p.string],
            result: r.data,
            handler: ({ chain, network }, [req, passphrase]) =>
              sendFromWallet(
                Object.assign({}, node, { wallet, chain, chainId: network.chainId }),
                req,
                passphrase,
              ),
          }),
        }),
  });
}
