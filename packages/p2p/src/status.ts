import {
  bigintToBytes,
  bytesToBigint,
  bytesToHex,
  DecodeError,
  equalBytes,
  type RLPItem,
  rlpDecode,
  rlpEncode,
} from "@nodex/types";

/** What two nodes tell each other when they connect, and again on request. */
export interface Status {
  readonly networkId: number;
  readonly genesisHash: Uint8Array;
  readonly bestHash: Uint8Array;
  readonly bestNumber: bigint;
  readonly totalDifficulty: bigint;
}

/** RLP `[networkId, genesisHash, bestHash, bestNumber, totalDifficulty]`. */
export function encodeStatus(status: Status): Uint8Array {
  return rlpEncode([
    bigintToBytes(BigInt(status.networkId)),
    status.genesisHash,
    status.bestHash,
    bigintToBytes(status.bestNumber),
    bigintToBytes(status.totalDifficulty),
  ]);
}

/** Reads a status; throws `DecodeError` for anything but the five fields in their forms. */
export function decodeStatus(bytes: Uint8Array): Status {
  const item = rlpDecode(bytes, "status");
  if (item instanceof Uint8Array || item.length !== 5)
    throw new DecodeError("invalid status: expected a list of 5 items");
  const [networkId, genesisHash, bestHash, bestNumber, totalDifficulty] = item as [
    RLPItem,
    RLPItem,
    RLPItem,
    RLPItem,
    RLPItem,
  ];
  const id = bytesToBigint(networkId, "status network id", 6);
  if (id > BigInt(Number.MAX_SAFE_INTEGER))
    throw new DecodeError("invalid status network id: too large");
  return {
    networkId: Number(id),
    genesisHash: hash32(genesisHash, "status genesis hash"),
    bestHash: hash32(bestHash, "status best hash"),
    bestNumber: bytesToBigint(bestNumber, "status best number", 8),
    totalDifficulty: bytesToBigint(totalDifficulty, "status total difficulty", 32),
  };
}

/** Why a peer with status `remote` cannot be ours; undefined when it can. */
export function statusMismatch(local: Status, remote: Status): string | undefined {
  if (remote.networkId !== local.networkId)
    return `network id ${remote.networkId}, ours is ${local.networkId}`;
  if (!equalBytes(remote.genesisHash, local.genesisHash))
    return `genesis ${bytesToHex(remote.genesisHash)}, ours is ${bytesToHex(local.genesisHash)}`;
  return undefined;
}

function hash32(item: RLPItem, what: string): Uint8Array {
  if (!(item instanceof Uint8Array) || item.length !== 32)
    throw new DecodeError(`invalid ${what}: expected 32 bytes`);
  return item;
}
