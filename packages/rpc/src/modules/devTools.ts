import { gunzipSync, gzipSync } from "node:zlib";
import { decodeStateFile, encodeStateFile, redactUrl, type StateFile } from "@nodex/state";
import {
  bytesToHex,
  CodecError,
  encodeQuantity,
  hexToBytes,
  type ModuleName,
  parseAddress,
  parseData,
} from "@nodex/types";
import { invalidParams } from "../errors.js";
import { type ForkHistory, forkedNetwork } from "../forkHistory.js";
import { jsonType, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService, DevControls, RPCServices } from "../services.js";
import { fillSendRequest, sendRequest } from "./ethAccounts.js";
import { flexibleInteger } from "./evm.js";

/**
 * The test helpers of Hardhat's network and Anvil (`hardhat_*`, `anvil_*`), served on the
 * development networks under both prefixes, as `@nomicfoundation/hardhat-network-helpers` and
 * viem's test client (`mode: "hardhat"` or `"anvil"`) call them. Each answers as the tool whose
 * prefix it carries: Hardhat's methods `true`, Anvil's `null`.
 */

/** A storage slot as the helpers send it: a QUANTITY, or 32 bytes with leading zeros (viem). */
const slot = {
  name: "storage slot",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): Uint8Array => {
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(value))
      throw new CodecError(
        arg,
        `expected a storage slot as hex of at most 32 bytes, got ${shown(value)}`,
      );
    return leftPad32(value.slice(2));
  },
};

/** A storage value: at most 32 bytes of hex (Hardhat's helpers send exactly 32), left-padded. */
const word = {
  name: "storage value",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): Uint8Array => {
    const bytes = parseData(value, arg);
    if (bytes.length > 32)
      throw new CodecError(arg, `a storage value is at most 32 bytes, got ${bytes.length}`);
    const out = new Uint8Array(32);
    out.set(bytes, 32 - bytes.length);
    return out;
  },
};

function leftPad32(hex: string): Uint8Array {
  return hexToBytes(`0x${hex.padStart(64, "0")}`);
}

function shown(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : jsonType(value);
}

const optionalCount = (what: string) => ({
  ...flexibleInteger(what),
  optional: true,
  defaultValue: undefined as bigint | undefined,
});

/** `hardhat_reset`'s forking params: the upstream's URL and its block (Hardhat's `forking`). */
interface ResetForking {
  readonly jsonRpcUrl: string;
  readonly blockNumber: bigint | undefined;
}

/** `hardhat_reset`'s optional argument: `{forking?: {jsonRpcUrl, blockNumber?}}`. */
const resetOptions = {
  name: "reset options",
  optional: true,
  defaultValue: undefined as ResetForking | undefined,
  parse: (value: unknown, arg: number): ResetForking | undefined => {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new CodecError(arg, `expected an object, got ${jsonType(value)}`);
    const o = value as Record<string, unknown>;
    for (const key of Object.keys(o))
      if (key !== "forking") throw new CodecError(arg, `unknown field ${JSON.stringify(key)}`);
    if (o.forking === undefined || o.forking === null) return undefined;
    if (typeof o.forking !== "object" || Array.isArray(o.forking))
      throw new CodecError(arg, `forking: expected an object, got ${jsonType(o.forking)}`);
    const f = o.forking as Record<string, unknown>;
    if (typeof f.jsonRpcUrl !== "string")
      throw new CodecError(
        arg,
        `forking.jsonRpcUrl: expected a URL, got ${jsonType(f.jsonRpcUrl)}`,
      );
    const blockNumber =
      f.blockNumber === undefined || f.blockNumber === null
        ? undefined
        : flexibleInteger("forking.blockNumber").parse(f.blockNumber, arg);
    return { jsonRpcUrl: f.jsonRpcUrl, blockNumber };
  },
};

/**
 * Whether a reset's forking params name this node's own fork point (one of its `--fork-url`s and
 * its fork block): a chain starts from one block, kept in its datadir, and is not moved to
 * another network's block; a reset to its own fork point is a reset without params.
 */
function checkResetForking(forking: ResetForking, history: ForkHistory | undefined): void {
  const same =
    history !== undefined &&
    forking.blockNumber === history.forkBlock &&
    history.upstreamUrls.some((url) => sameUrl(url, forking.jsonRpcUrl));
  if (same) return;
  const here =
    history === undefined
      ? "this chain is not a fork"
      : `this chain is a fork of block ${history.forkBlock}`;
  throw invalidParams(
    `forking: a reset onto another fork point is not supported (${here}); restart nodex with --fork-url <url> --fork-block <number> and a new --datadir for that block (a reset without params, or with this fork's own URL and block, goes back to this chain's first block)`,
  );
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return a === b;
  }
}

const address = { ...p.address, parse: parseAddress };

/** The most a dumped state may take once decompressed. */
const MAX_STATE_BYTES = 512 * 2 ** 20;

/** `loadState`'s argument: what `dumpState` answered (gzip of the state file), or its JSON bytes. */
const stateBytes = {
  name: "state",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): StateFile => {
    const bytes = parseData(value, arg);
    let json = bytes;
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      try {
        json = gunzipSync(bytes, { maxOutputLength: MAX_STATE_BYTES });
      } catch (err) {
        throw new CodecError(
          arg,
          `state: not a gzip stream that opens (${(err as Error).message})`,
        );
      }
    }
    try {
      return decodeStateFile(json);
    } catch (err) {
      throw new CodecError(arg, (err as Error).message);
    }
  },
};
const LATEST = { kind: "tag", tag: "latest" } as const;

/**
 * The methods shared by both prefixes; `done` is what a method that answers nothing answers:
 * `true` (Hardhat) or `null` (Anvil).
 */
function devToolMethods(dev: DevControls, done: true | null, history: ForkHistory | undefined) {
  const edit = (name: string) => `${done === true ? "hardhat" : "anvil"}_${name}`;
  return {
    setBalance: method({
      params: [address, p.quantity],
      result: r.json,
      handler: async (_s, [account, balance]) => {
        await dev.editState({
          method: edit("setBalance"),
          kind: "balance",
          address: account,
          balance,
        });
        return done;
      },
    }),
    setCode: method({
      params: [address, p.data],
      result: r.json,
      handler: async (_s, [account, code]) => {
        await dev.editState({ method: edit("setCode"), kind: "code", address: account, code });
        return done;
      },
    }),
    setNonce: method({
      params: [address, flexibleInteger("nonce")],
      result: r.json,
      handler: async (_s, [account, nonce]) => {
        if (nonce >= 2n ** 64n - 1n)
          throw invalidParams(`nonce must be below 2^64 - 1, got ${nonce}`);
        await dev.editState({ method: edit("setNonce"), kind: "nonce", address: account, nonce });
        return done;
      },
    }),
    setStorageAt: method({
      params: [address, slot, word],
      result: r.json,
      handler: async (_s, [account, position, value]) => {
        await dev.editState({
          method: edit("setStorageAt"),
          kind: "storage",
          address: account,
          slot: position,
          value,
        });
        return done;
      },
    }),
    impersonateAccount: method({
      params: [address],
      result: r.json,
      handler: (_s, [account]) => {
        dev.impersonate(account);
        return done;
      },
    }),
    stopImpersonatingAccount: method({
      params: [address],
      result: r.json,
      handler: (_s, [account]) => {
        const was = dev.stopImpersonating(account);
        return done === true ? was : null;
      },
    }),
    autoImpersonateAccount: method({
      params: [p.boolean],
      result: r.json,
      handler: (_s, [on]) => {
        dev.setAutoImpersonate(on);
        return done;
      },
    }),
    mine: method({
      params: [optionalCount("number of blocks"), optionalCount("interval")],
      result: r.json,
      handler: async (_s, [count, interval]) => {
        await dev.mineBlocks(count ?? 1n, interval);
        return done;
      },
    }),
    setCoinbase: method({
      params: [address],
      result: r.json,
      handler: (_s, [account]) => {
        dev.setCoinbase(account);
        return done;
      },
    }),
    getAutomine: method({
      params: [],
      result: r.boolean,
      handler: () => dev.automining,
    }),
    setAutomine: method({
      params: [p.boolean],
      result: r.json,
      handler: async (_s, [on]) => {
        await dev.setAutomine(on);
        return done;
      },
    }),
    dumpState: method({
      params: [],
      result: r.data,
      handler: async () => gzipSync(encodeStateFile(await dev.dumpState())),
    }),
    loadState: method({
      params: [stateBytes],
      result: r.json,
      handler: async (_s, [file]) => {
        await dev.loadState(file);
        return true;
      },
    }),
    reset: method({
      params: [resetOptions],
      result: r.json,
      handler: async (_s, [forking]) => {
        if (forking !== undefined) checkResetForking(forking, history);
        await dev.reset();
        return done;
      },
    }),
  };
}

/** What `hardhat_metadata` and `anvil_metadata` answer. */
async function metadata(
  services: RPCServices,
  instanceId: string,
  dev: DevControls,
  anvil: boolean,
  history: ForkHistory | undefined,
): Promise<Record<string, unknown>> {
  const head = await services.reader?.resolve(LATEST);
  return {
    clientVersion: services.clientVersion,
    chainId: services.network.chainId,
    instanceId,
    latestBlockNumber: Number(head?.block.header.number ?? 0n),
    latestBlockHash: head == null ? null : bytesToHex(head.hash),
    // As Hardhat's and Anvil's say of a fork; absent on a chain of its own.
    ...(history === undefined ? {} : { forkedNetwork: await forkedNetwork(history) }),
    ...(anvil ? { snapshots: dev.snapshotCount } : {}),
  };
}

/** `hardhat_*`: the helpers under Hardhat's names and answers. */
export function hardhatModule(dev: DevControls, instanceId: string, history?: ForkHistory) {
  return defineModule("hardhat" satisfies ModuleName, {
    ...devToolMethods(dev, true, history),
    dropTransaction: method({
      params: [p.hash],
      result: r.boolean,
      handler: (_s, [hash]) => dev.dropTransaction(hash),
    }),
    metadata: method({
      params: [],
      result: r.json,
      handler: (services) => metadata(services, instanceId, dev, false, history),
    }),
    setNextBlockBaseFeePerGas: method({
      params: [p.quantity],
      result: r.json,
      handler: (_s, [fee]) => noBaseFee(fee),
    }),
  });
}

/** `anvil_*`: the helpers under Anvil's names and answers. */
export function anvilModule(dev: DevControls, instanceId: string, history?: ForkHistory) {
  return defineModule("anvil" satisfies ModuleName, {
    ...devToolMethods(dev, null, history),
    dropTransaction: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => ((await dev.dropTransaction(hash)) ? bytesToHex(hash) : null),
    }),
    // Anvil's interval is in seconds (Hardhat's evm_setIntervalMining takes milliseconds).
    setIntervalMining: method({
      params: [flexibleInteger("interval")],
      result: r.json,
      handler: async (_s, [seconds]) => {
        await dev.setIntervalMining(Number(seconds) * 1000);
        return null;
      },
    }),
    metadata: method({
      params: [],
      result: r.json,
      handler: (services) => metadata(services, instanceId, dev, true, history),
    }),
    nodeInfo: method({
      params: [],
      result: r.json,
      handler: async ({ reader, network, chain }) => {
        const latest = await reader?.resolve(LATEST);
        const head = latest?.block.header;
        return {
          currentBlockNumber: encodeQuantity(head?.number ?? 0n),
          currentBlockTimestamp: Number(head?.timestamp ?? 0n),
          currentBlockHash: latest == null ? null : bytesToHex(latest.hash),
          hardFork: "cancun",
          transactionOrder: "fees",
          environment: {
            baseFee: "0x0",
            chainId: network.chainId,
            gasLimit: encodeQuantity(head?.gasLimit ?? 0n),
            gasPrice: encodeQuantity(chain.gasPrice()),
          },
          forkConfig:
            history === undefined
              ? { forkUrl: null, forkBlockNumber: null, forkRetryBackoff: null }
              : {
                  // Never the URL as given: a provider's key may be in it.
                  forkUrl: history.upstreamUrls.map(redactUrl)[0] ?? null,
                  forkBlockNumber: Number(history.forkBlock),
                  forkRetryBackoff: null,
                },
        };
      },
    }),
    setNextBlockBaseFeePerGas: method({
      params: [p.quantity],
      result: r.json,
      handler: (_s, [fee]) => noBaseFee(fee),
    }),
  });
}

/** The chain has no base fee (RSKIP546 prices typed transactions as legacy ones): 0 is all there is. */
function noBaseFee(fee: bigint): null {
  if (fee !== 0n)
    throw invalidParams("this chain has no base fee: blocks price gas by their minimum gas price");
  return null;
}

/**
 * `eth_sendUnsignedTransaction` (Anvil's, and viem's test client's): a transaction object sent
 * without a key from any account, as Anvil takes it, its defaults filled in as
 * `eth_sendTransaction` fills them.
 */
export function devEthModule(dev: DevControls, reader: ChainReaderService) {
  return defineModule("eth", {
    sendUnsignedTransaction: method({
      params: [sendRequest],
      result: r.data,
      handler: async ({ chain }, [req]) =>
        dev.sendImpersonated(await fillSendRequest({ reader, chain }, req), req.from, {
          wait: "built",
          anyAccount: true,
        }),
    }),
  });
}
