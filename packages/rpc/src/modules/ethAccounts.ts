import type { CallRequest } from "@nodex/evm";
import {
  type AccessListEntry,
  type Address,
  CodecError,
  equalBytes,
  NodexError,
  parseQuantity,
  type SignedTransaction,
  type TransactionType,
  type UnsignedTransaction,
} from "@nodex/types";
import { accessListBytes, fieldReader, parseAccessList, parseCallObject } from "../callObject.js";
import { jsonType, type ParamSpec, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type {
  ChainReaderService,
  ChainView,
  TransactionService,
  WalletService,
} from "../services.js";
import { type TypedData, WalletError, WalletErrorCode } from "../wallet.js";

/** `eth_sendTransaction`'s gas when the object gives none (the spec's default). */
export const DEFAULT_SEND_GAS = 90_000n;

const PENDING = { kind: "tag", tag: "pending" } as const;

/** A transaction object of `eth_sendTransaction` and `personal_sendTransaction`. */
export interface SendRequest {
  readonly from: Address;
  readonly to: Address | null;
  readonly gas?: bigint;
  readonly gasPrice?: bigint;
  readonly value?: bigint;
  readonly data?: Uint8Array;
  readonly nonce?: bigint;
  /**
   * The transaction's type: as `type` says, else 2 with `maxFeePerGas` or
   * `maxPriorityFeePerGas`, 1 with an `accessList`; absent when nothing says (see
   * `fillSendRequest`).
   */
  readonly type?: TransactionType;
  readonly maxFeePerGas?: bigint;
  readonly maxPriorityFeePerGas?: bigint;
  readonly accessList?: readonly AccessListEntry[];
}

/** The call-object fields plus `nonce`; `from` is required. */
export function parseSendRequest(value: unknown, arg: number): SendRequest {
  const call = parseCallObject(value, arg);
  if (call.from === undefined) throw new CodecError(arg, "from: the sender is required");
  const rawNonce = (value as Record<string, unknown>).nonce;
  let nonce: bigint | undefined;
  if (rawNonce !== undefined && rawNonce !== null) {
    try {
      nonce = parseQuantity(rawNonce, arg, { maxBits: 64 });
    } catch (err) {
      if (err instanceof CodecError) throw new CodecError(arg, `nonce: ${err.reason}`);
      throw err;
    }
  }
  const typed = parseTypedFields(value as Record<string, unknown>, arg);
  // Object.assign, not spreads: on V8 11 (Node 20) a spread followed by fields makes a hidden
  // class per request.
  return Object.assign({}, call, { from: call.from }, nonce === undefined ? {} : { nonce }, typed);
}

/** The typed-transaction fields of a send request, and the type they make. */
function parseTypedFields(
  o: Record<string, unknown>,
  arg: number,
): Pick<SendRequest, "type" | "maxFeePerGas" | "maxPriorityFeePerGas" | "accessList"> {
  const field = fieldReader(o, arg);
  const given = field("type", (v, a) => parseQuantity(v, a, { maxBits: 8 }));
  if (given !== undefined && given > 2n)
    throw new CodecError(arg, `type: ${given} is not 0 (legacy), 1 or 2`);
  const maxFeePerGas = field("maxFeePerGas", parseQuantity);
  const maxPriorityFeePerGas = field("maxPriorityFeePerGas", parseQuantity);
  const accessList = field("accessList", parseAccessList);
  const fees = maxFeePerGas !== undefined || maxPriorityFeePerGas !== undefined;
  const type = (
    given !== undefined ? Number(given) : fees ? 2 : accessList !== undefined ? 1 : 0
  ) as TransactionType;
  if (type === 2 && o.gasPrice !== undefined && o.gasPrice !== null)
    throw new CodecError(
      arg,
      "gasPrice: a type 2 transaction has maxFeePerGas and maxPriorityFeePerGas instead",
    );
  if (type !== 2 && fees)
    throw new CodecError(arg, `maxFeePerGas: a type ${type} transaction has gasPrice instead`);
  if (type === 0 && accessList !== undefined)
    throw new CodecError(arg, "accessList: a legacy transaction has none");
  // A type the request states, or its fields imply; none when nothing says (the node chooses).
  const stated = given !== undefined || fees || accessList !== undefined;
  return {
    ...(stated ? { type } : {}),
    ...(maxFeePerGas === undefined ? {} : { maxFeePerGas }),
    ...(maxPriorityFeePerGas === undefined ? {} : { maxPriorityFeePerGas }),
    ...(accessList === undefined ? {} : { accessList }),
  };
}

export const sendRequest: ParamSpec<SendRequest> = {
  name: "transaction",
  parse: parseSendRequest,
  optional: false,
  defaultValue: undefined,
};

/** What sending from the wallet needs of the node: the pending nonce and the way in. */
export interface WalletNode {
  readonly reader: ChainReaderService;
  readonly transactions: TransactionService;
}

type WalletDeps = WalletNode & { wallet: WalletService; chain: ChainView; chainId: number };

/** Fills the defaults (gas 90000, the node's gas price, the pending nonce) and signs. */
async function signFromWallet(
  deps: WalletDeps,
  req: SendRequest,
  passphrase?: string,
): Promise<SignedTransaction> {
  const tx = await fillSendRequest(deps, req);
  return deps.wallet.signTransaction(req.from, tx, deps.chainId, passphrase);
}

/**
 * A send request with the defaults filled in: the gas (see `defaultSendGas`), the node's gas
 * price, the pending nonce.
 */
export async function fillSendRequest(
  deps: { reader: ChainReaderService; chain: ChainView },
  req: SendRequest,
): Promise<UnsignedTransaction> {
  const price = deps.chain.gasPrice();
  // Unsaid, the type is legacy: the spec's fields, and on this chain the cheapest (RSKIP546
  // charges 80 gas for each byte of a typed transaction's access list, 1 for an empty one).
  const type = req.type ?? 0;
  // A type 2 transaction's fees default to the node's gas price (no base fee: the whole price is
  // the priority fee), and each to the other when only one is given.
  const maxPriorityFeePerGas = req.maxPriorityFeePerGas ?? req.maxFeePerGas ?? price;
  const maxFeePerGas =
    req.maxFeePerGas ?? (req.maxPriorityFeePerGas === undefined ? price : maxPriorityFeePerGas);
  const accessList = type === 0 ? undefined : (req.accessList ?? []);
  return {
    nonce: req.nonce ?? (await deps.reader.nonce(req.from, PENDING)),
    gasPrice: req.gasPrice ?? price,
    gasLimit: req.gas ?? (await defaultSendGas(deps.reader, req, accessList)),
    to: req.to,
    value: req.value ?? 0n,
    data: req.data ?? new Uint8Array(),
    type,
    ...(accessList === undefined ? {} : { accessList }),
    ...(type === 2 ? { maxFeePerGas, maxPriorityFeePerGas } : {}),
  };
}

/**
 * `eth_sendTransaction`'s gas when the request gives none: the spec's 90,000, unless the
 * transaction would run out of gas with it (a deployment, a heavy call), and then the node's
 * estimate, as geth, Hardhat and Anvil fill it, so that clients which leave the gas to the
 * node (viem's and web3.js's sends from the node's accounts) can deploy. A transaction that
 * fails for another reason keeps 90,000: it is mined, and its failure is told then.
 */
async function defaultSendGas(
  reader: ChainReaderService,
  req: SendRequest,
  accessList: readonly AccessListEntry[] | undefined,
): Promise<bigint> {
  const call: CallRequest = {
    from: req.from,
    to: req.to,
    value: req.value ?? 0n,
    data: req.data ?? new Uint8Array(),
    accessListBytes: accessList === undefined ? 0 : accessListBytes(accessList),
  };
  let outOfGas: boolean;
  try {
    const out = await reader.call({ ...call, gas: DEFAULT_SEND_GAS }, PENDING);
    outOfGas = !out.success && out.error?.includes("out of gas") === true;
  } catch (err) {
    // Below the intrinsic gas (a large deployment's data alone costs more).
    if (!(err instanceof NodexError)) throw err;
    outOfGas = true;
  }
  if (!outOfGas) return DEFAULT_SEND_GAS;
  const estimate = await reader.estimateGas(call, PENDING);
  return typeof estimate === "bigint" ? estimate : DEFAULT_SEND_GAS;
}

/** Fills the defaults (gas 90000, the node's gas price, the pending nonce), signs and sends. */
export async function sendFromWallet(
  deps: WalletDeps,
  req: SendRequest,
  passphrase?: string,
): Promise<Uint8Array> {
  const signed = await signFromWallet(deps, req, passphrase);
  return deps.transactions.sendTransaction(signed.raw, { local: true });
}

/** A JSON object, as itself or as JSON text (MetaMask and ethers send the text). */
function objectOrJson(value: unknown, arg: number): Record<string, unknown> {
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      throw new CodecError(arg, "typed data: not valid JSON text");
    }
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new CodecError(arg, `typed data: expected an object, got ${jsonType(v)}`);
  return v as Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** EIP-712 typed data: `types`, `primaryType` (one of them), `domain` and `message`. */
export function parseTypedData(value: unknown, arg: number): TypedData {
  const raw = objectOrJson(value, arg);
  const { types, primaryType, domain, message } = raw;
  if (!isObject(types)) throw new CodecError(arg, "typed data: types must be an object");
  for (const [name, fields] of Object.entries(types)) {
    if (
      !Array.isArray(fields) ||
      !fields.every((f) => isObject(f) && typeof f.name === "string" && typeof f.type === "string")
    )
      throw new CodecError(arg, `typed data: types.${name} must be a list of {name, type}`);
  }
  if (typeof primaryType !== "string" || !(primaryType in types))
    throw new CodecError(arg, "typed data: primaryType must name one of types");
  if (!isObject(domain)) throw new CodecError(arg, "typed data: domain must be an object");
  if (!isObject(message)) throw new CodecError(arg, "typed data: message must be an object");
  return {
    types: types as TypedData["types"],
    primaryType,
    domain,
    message,
  };
}

const typedData: ParamSpec<TypedData> = {
  name: "typed data",
  parse: parseTypedData,
  optional: false,
  defaultValue: undefined,
};

/** The hosted endpoint holds no keys: every account is unknown there. */
export function noKeysWhenHosted(hosted: boolean, address: Address): void {
  if (hosted) {
    throw new WalletError(WalletErrorCode.UNKNOWN_ACCOUNT, "unknown account", { address });
  }
}

/** `eth_sign` and (with the chain) `eth_sendTransaction`, served from the node's wallet. */
export function ethAccountsModule(wallet: WalletService, node: WalletNode | undefined) {
  const methods = {
    sign: method({
      params: [p.address, p.data],
      result: r.data,
      handler: (_s, [address, message], { hosted }) => {
        noKeysWhenHosted(hosted, address);
        return wallet.signMessage(address, message);
      },
    }),
    // EIP-712, as MetaMask, ethers (`signTypedData`) and viem call it.
    signTypedData_v4: method({
      params: [p.address, typedData],
      result: r.data,
      handler: (_s, [address, data], { hosted }) => {
        noKeysWhenHosted(hosted, address);
        return wallet.signTypedData(address, data);
      },
    }),
    ...(node === undefined
      ? {}
      : {
          // Signed with the defaults eth_sendTransaction fills, and not sent: the raw bytes.
          signTransaction: method({
            params: [sendRequest],
            result: r.data,
            handler: async ({ chain, network }, [req], { hosted }) => {
              noKeysWhenHosted(hosted, req.from);
              const signed = await signFromWallet(
                Object.assign({}, node, { wallet, chain, chainId: network.chainId }),
                req,
              );
              return signed.raw;
            },
          }),
          sendTransaction: method({
            params: [sendRequest],
            result: r.data,
            handler: async ({ chain, network, dev }, [req], { hosted }) => {
              noKeysWhenHosted(hosted, req.from);
              // A development network's impersonated account (hardhat_impersonateAccount), when
              // the wallet does not hold its key: sent without one.
              if (
                dev?.isImpersonated(req.from) === true &&
                !wallet.list().some((a) => equalBytes(a, req.from))
              )
                return dev.sendImpersonated(
                  await fillSendRequest({ reader: node.reader, chain }, req),
                  req.from,
                  { wait: "built" },
                );
              return sendFromWallet(
                Object.assign({}, node, { wallet, chain, chainId: network.chainId }),
                req,
              );
            },
          }),
        }),
  };
  return defineModule("eth", methods);
}
