import { bytesToHex, CodecError, encodeQuantity, parseData, parseQuantity } from "@nodex/types";
import { jsonType } from "../params.js";
import { defineModule, type ModuleDefinition, method } from "../registry.js";
import { r } from "../results.js";
import type { EthWork, MinerService, MinerWork, SubmittedBlockInfo } from "../services.js";

const HEX = /^[0-9a-fA-F]*$/;

/**
 * Hex as merge-mining pool software sends it: plain, or with `0x`; an even number of digits.
 * `size` fixes the byte length.
 */
function looseHex(what: string, size?: number) {
  return {
    name: what,
    optional: false,
    defaultValue: undefined,
    parse: (value: unknown, arg: number): Uint8Array => {
      if (typeof value !== "string")
        throw new CodecError(arg, `expected ${what} as a hex string, got ${jsonType(value)}`);
      const digits = value.startsWith("0x") || value.startsWith("0X") ? value.slice(2) : value;
      if (!HEX.test(digits)) throw new CodecError(arg, `${what} is not hex`);
      if (digits.length % 2 !== 0)
        throw new CodecError(arg, `${what} has an odd number of hex digits`);
      if (size !== undefined && digits.length !== size * 2)
        throw new CodecError(arg, `${what} has ${digits.length / 2} bytes, want ${size}`);
      if (digits.length === 0) throw new CodecError(arg, `${what} is empty`);
      return Uint8Array.from(Buffer.from(digits, "hex"));
    },
  };
}

/** A whitespace-separated list of 32-byte hashes in hex, as the reference node takes them. */
function hashList(what: string) {
  return {
    name: what,
    optional: false,
    defaultValue: undefined,
    parse: (value: unknown, arg: number): Uint8Array[] => {
      if (typeof value !== "string")
        throw new CodecError(arg, `expected ${what} as a string, got ${jsonType(value)}`);
      const items = value.trim() === "" ? [] : value.trim().split(/\s+/);
      if (items.length === 0) throw new CodecError(arg, `the list of ${what} can't be empty`);
      return items.map((item, i) => {
        try {
          return looseHex(`${what}[${i}]`, 32).parse(item, arg);
        } catch (err) {
          if (err instanceof CodecError) throw new CodecError(arg, err.reason);
          throw err;
        }
      });
    },
  };
}

/** A transaction count as the reference node reads it: hex digits, `0x` optional. */
const transactionCount = {
  name: "transaction count",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number): number => {
    if (typeof value !== "string")
      throw new CodecError(arg, `expected the transaction count as hex, got ${jsonType(value)}`);
    const digits = value.startsWith("0x") ? value.slice(2) : value;
    if (!/^[0-9a-fA-F]{1,8}$/.test(digits))
      throw new CodecError(arg, "the transaction count is not a hex number of at most 8 digits");
    return Number.parseInt(digits, 16);
  },
};

const encodeWork = (work: MinerWork) => ({
  blockHashForMergedMining: bytesToHex(work.blockHashForMergedMining),
  target: bytesToHex(work.target),
  feesPaidToMiner: work.feesPaidToMiner.toString(10),
  notify: work.notify,
  parentBlockHash: bytesToHex(work.parentBlockHash),
});

const encodeSubmitted = (info: SubmittedBlockInfo) => ({
  blockImportedResult: bytesToHex(new TextEncoder().encode(info.blockImportedResult)),
  blockHash: bytesToHex(info.blockHash),
  blockIncludedHeight: encodeQuantity(info.blockIncludedHeight),
});

const encodeEthWork = (work: EthWork) => [
  bytesToHex(work.powHash),
  bytesToHex(work.seedHash),
  bytesToHex(work.boundary),
];

const blockHashArg = looseHex("block hash");

/** The `mnr_` module and the work methods of `eth_`, served from a `MinerService`. */
export function miningModules(miner: MinerService): ModuleDefinition[] {
  const mnr = defineModule("mnr", {
    getWork: method({ params: [], result: encodeWork, handler: () => miner.getWork() }),
    submitBitcoinBlock: method({
      params: [looseHex("Bitcoin block")],
      result: encodeSubmitted,
      handler: (_s, [block]) => miner.submitBitcoinBlock(block),
    }),
    submitBitcoinBlockTransactions: method({
      params: [
        blockHashArg,
        looseHex("Bitcoin block header", 80),
        looseHex("coinbase transaction"),
        hashList("transaction hashes"),
      ],
      result: encodeSubmitted,
      // The block hash argument is not used: the block is found from the coinbase's tag.
      handler: (_s, [_hash, header, coinbase, txids]) =>
        miner.submitBitcoinBlockTransactions(header, coinbase, txids),
    }),
    submitBitcoinBlockPartialMerkle: method({
      params: [
        blockHashArg,
        looseHex("Bitcoin block header", 80),
        looseHex("coinbase transaction"),
        hashList("merkle hashes"),
        transactionCount,
      ],
      result: encodeSubmitted,
      handler: (_s, [_hash, header, coinbase, hashes, count]) =>
        miner.submitBitcoinBlockPartialMerkle(header, coinbase, hashes, count),
    }),
  });
  const eth = defineModule("eth", {
    getWork: method({ params: [], result: encodeEthWork, handler: () => miner.getEthWork() }),
    submitWork: method({
      params: [
        {
          name: "nonce",
          optional: false,
          defaultValue: undefined,
          parse: (v: unknown, arg: number) => parseData(v, arg, { size: 8, what: "nonce" }),
        },
        {
          name: "pow hash",
          optional: false,
          defaultValue: undefined,
          parse: (v: unknown, arg: number) => parseData(v, arg, { size: 32, what: "hash" }),
        },
        {
          name: "mix digest",
          optional: false,
          defaultValue: undefined,
          parse: (v: unknown, arg: number) => parseData(v, arg, { size: 32, what: "hash" }),
        },
      ],
      result: r.boolean,
      handler: (_s, [nonce, powHash, mix]) => miner.submitEthWork(nonce, powHash, mix),
    }),
    submitHashrate: method({
      params: [
        {
          name: "hashrate",
          optional: false,
          defaultValue: undefined,
          parse: (v: unknown, arg: number) => {
            // geth takes a 32-byte hex value; a QUANTITY is accepted too.
            if (typeof v === "string" && v.length === 66) return BigInt(v);
            return parseQuantity(v, arg);
          },
        },
        {
          name: "id",
          optional: false,
          defaultValue: undefined,
          parse: (v: unknown, arg: number) => parseData(v, arg, { size: 32, what: "hash" }),
        },
      ],
      result: r.boolean,
      handler: (_s, [rate, id]) => miner.submitHashrate(rate, id),
    }),
    netHashrate: method({ params: [], result: r.quantity, handler: () => miner.netHashrate() }),
  });
  return [mnr, eth];
}
