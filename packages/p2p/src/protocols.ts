import {
  type BlockHeader,
  bigintToBytes,
  bytesToBigint,
  DecodeError,
  decodeBody,
  decodeHeader,
  decodeReceiptList,
  encodeBody,
  encodeHeader,
  encodeReceiptList,
  equalBytes,
  headerHash,
  type Receipt,
  type RLPItem,
  rlpDecode,
  rlpEncode,
} from "@nodex/types";
import type { BlockBody, ChainSource, StateItemKey } from "./chainSource.js";

/** The protocols of a Nodex node, by the name in their id `/nodex/<networkId>/<name>/1`. */
export const Protocol = {
  STATUS: "status",
  HEADERS_BY_RANGE: "headers_by_range",
  HEADERS_BY_HASH: "headers_by_hash",
  BODIES_BY_HASH: "bodies_by_hash",
  RECEIPTS_BY_HASH: "receipts_by_hash",
  STATE_ITEMS: "state_items",
} as const;
export type Protocol = (typeof Protocol)[keyof typeof Protocol];

/** The libp2p protocol id of `name` on network `networkId`. */
export function protocolId(networkId: number, name: Protocol): string {
  return `/nodex/${networkId}/${name}/1`;
}

/** Canonical headers `start`, `start + 1`, … : `count` of them, fewer past the head. */
export interface HeadersByRange {
  readonly start: bigint;
  readonly count: number;
}

/** The kind of a state item on the wire: 0 a trie node, 1 code. */
export const StateItemKind = { TRIE_NODE: 0, CODE: 1 } as const;

/** What each request protocol takes and gives back. */
export interface RequestTypes {
  headers_by_range: { request: HeadersByRange; response: BlockHeader[] };
  /** The headers of a prefix of the hashes: the answer stops at the first unknown one. */
  headers_by_hash: { request: readonly Uint8Array[]; response: BlockHeader[] };
  /** The bodies of a prefix of the hashes: `response[i]` is the body of block `hashes[i]`. */
  bodies_by_hash: { request: readonly Uint8Array[]; response: BlockBody[] };
  /** The receipts of a prefix of the hashes: `response[i]` are block `hashes[i]`'s receipts. */
  receipts_by_hash: { request: readonly Uint8Array[]; response: Receipt[][] };
  /**
   * The items of a prefix of the request, in its order: `response[i]` holds the bytes of item
   * `i`, or is empty when the peer does not hold it. Not checked against the hashes here: the
   * state download checks every answer (an answer that does not hash to its item is the
   * peer's fault).
   */
  state_items: { request: readonly StateItemKey[]; response: Uint8Array[] };
}
export type RequestProtocol = keyof RequestTypes;

/** The most headers one request may ask for. */
export const MAX_HEADERS_PER_REQUEST = 192;
/** The most bodies one request may ask for. */
export const MAX_BODIES_PER_REQUEST = 128;
/** The most receipt lists one request may ask for. */
export const MAX_RECEIPTS_PER_REQUEST = 128;
/** The most state items (trie nodes and code) one request may ask for. */
export const MAX_STATE_ITEMS_PER_REQUEST = 384;
/**
 * State items one token of the per-peer rate limit pays for. A trie node is a few hundred bytes
 * at most, read by one key, where a header or a body costs one token each: counted one by one,
 * a state of millions of nodes would take hours at any limit that still stops a flood of bodies.
 */
export const STATE_ITEMS_PER_TOKEN = 16;
/**
 * The bytes of state items a server answers at most: it stops before the item that would go
 * past them (the first item is always answered, whatever its size).
 */
export const MAX_STATE_RESPONSE_BYTES = 2 * 1024 * 1024;
/**
 * The bytes a server puts in one response before it stops (at least one item is sent): the
 * client asks again for the rest.
 */
export const RESPONSE_SOFT_BYTES = 2 * 1024 * 1024;

/** The hard caps of each protocol's frames: a request, and one response chunk. */
export const FRAME_CAPS: Readonly<Record<Protocol, { request: number; chunk: number }>> =
  Object.freeze({
    status: { request: 256, chunk: 256 },
    headers_by_range: { request: 32, chunk: 64 * 1024 },
    headers_by_hash: { request: 8 + MAX_HEADERS_PER_REQUEST * 33, chunk: 64 * 1024 },
    bodies_by_hash: { request: 8 + MAX_BODIES_PER_REQUEST * 33, chunk: 16 * 1024 * 1024 },
    receipts_by_hash: { request: 8 + MAX_RECEIPTS_PER_REQUEST * 33, chunk: 16 * 1024 * 1024 },
    // Each item `[kind, hash]` takes 35 bytes (a list prefix, the kind, a 33-byte string).
    state_items: { request: 8 + MAX_STATE_ITEMS_PER_REQUEST * 35, chunk: MAX_STATE_RESPONSE_BYTES },
  });

/**
 * One request protocol: its request codec and limits, what the server answers from a
 * `ChainSource`, how the client reads and checks the answer.
 */
export interface RequestSpec<Req, Item> {
  readonly maxItems: number;
  encodeRequest(req: Req): Uint8Array;
  /** Throws `DecodeError` for a request that breaks the protocol (its limits included). */
  decodeRequest(bytes: Uint8Array): Req;
  /** The items asked for: the most items an answer may hold. */
  itemsAsked(req: Req): number;
  /** The request's cost in the per-peer rate limit's tokens: its items when absent. */
  tokens?(req: Req): number;
  /** The encoded items of the answer, within the count and `RESPONSE_SOFT_BYTES`. */
  serve(source: ChainSource, req: Req): Promise<Uint8Array[]>;
  decodeItem(bytes: Uint8Array): Item;
  /** Why `items` are not an answer to `req`; undefined when they are. */
  checkResponse(req: Req, items: readonly Item[]): string | undefined;
}

type Specs = {
  [P in RequestProtocol]: RequestSpec<
    RequestTypes[P]["request"],
    RequestTypes[P]["response"][number]
  >;
};

const headersByRange: Specs["headers_by_range"] = {
  maxItems: MAX_HEADERS_PER_REQUEST,
  encodeRequest: (req) => rlpEncode([bigintToBytes(req.start), bigintToBytes(BigInt(req.count))]),
  decodeRequest: (bytes) => {
    const item = rlpDecode(bytes, "headers by range request");
    if (item instanceof Uint8Array || item.length !== 2)
      throw new DecodeError("invalid headers by range request: expected [start, count]");
    const start = bytesToBigint(item[0]!, "start", 8);
    const count = Number(bytesToBigint(item[1]!, "count", 4));
    checkCount(count, MAX_HEADERS_PER_REQUEST, "headers");
    return { start, count };
  },
  itemsAsked: (req) => req.count,
  serve: async (source, req) => {
    const out: Uint8Array[] = [];
    let bytes = 0;
    for (let i = 0; i < req.count && bytes < RESPONSE_SOFT_BYTES; i++) {
      const header = await source.headerByNumber(req.start + BigInt(i));
      if (header === undefined) break;
      const encoded = encodeHeader(header);
      out.push(encoded);
      bytes += encoded.length;
    }
    return out;
  },
  decodeItem: decodeHeader,
  checkResponse: (req, headers) => {
    for (let i = 0; i < headers.length; i++) {
      const header = headers[i]!;
      if (header.number !== req.start + BigInt(i))
        return `header ${i} is block ${header.number}, not ${req.start + BigInt(i)}`;
      if (i > 0 && !equalBytes(header.parentHash, headerHash(headers[i - 1]!)))
        return `header ${header.number} is not the child of the header before it`;
    }
    return undefined;
  },
};

/** A by-hash protocol: the items of a prefix of the hashes, in their order. */
function byHash<Item>(
  what: string,
  maxItems: number,
  read: (source: ChainSource, hash: Uint8Array) => Promise<Uint8Array | undefined>,
  decodeItem: (bytes: Uint8Array) => Item,
  matches?: (item: Item, hash: Uint8Array) => boolean,
): RequestSpec<readonly Uint8Array[], Item> {
  return {
    maxItems,
    encodeRequest: (hashes) => rlpEncode([...hashes]),
    decodeRequest: (bytes) => {
      const item = rlpDecode(bytes, `${what} request`);
      if (item instanceof Uint8Array)
        throw new DecodeError(`invalid ${what} request: expected a list of hashes`);
      checkCount(item.length, maxItems, what);
      return item.map((hash: RLPItem) => {
        if (!(hash instanceof Uint8Array) || hash.length !== 32)
          throw new DecodeError(`invalid ${what} request: a hash is not 32 bytes`);
        return hash;
      });
    },
    itemsAsked: (hashes) => hashes.length,
    serve: async (source, hashes) => {
      const out: Uint8Array[] = [];
      let bytes = 0;
      for (const hash of hashes) {
        if (bytes >= RESPONSE_SOFT_BYTES) break;
        const encoded = await read(source, hash);
        if (encoded === undefined) break;
        out.push(encoded);
        bytes += encoded.length;
      }
      return out;
    },
    decodeItem,
    checkResponse: (hashes, items) => {
      if (matches === undefined) return undefined;
      for (let i = 0; i < items.length; i++)
        if (!matches(items[i]!, hashes[i]!)) return `item ${i} is not block ${i} of the request`;
      return undefined;
    },
  };
}

/** State items by hash: request `[[kind, hash], …]`, one chunk per item (empty: not held). */
const stateItems: Specs["state_items"] = {
  maxItems: MAX_STATE_ITEMS_PER_REQUEST,
  encodeRequest: (items) =>
    rlpEncode(
      items.map((item) => [
        bigintToBytes(BigInt(item.code ? StateItemKind.CODE : StateItemKind.TRIE_NODE)),
        item.hash,
      ]),
    ),
  decodeRequest: (bytes) => {
    const list = rlpDecode(bytes, "state items request");
    if (list instanceof Uint8Array)
      throw new DecodeError("invalid state items request: expected a list of [kind, hash]");
    checkCount(list.length, MAX_STATE_ITEMS_PER_REQUEST, "state items");
    return list.map((entry: RLPItem, i) => {
      if (entry instanceof Uint8Array || entry.length !== 2)
        throw new DecodeError(`invalid state items request: item ${i} is not [kind, hash]`);
      const kind = bytesToBigint(entry[0]!, `state item ${i} kind`, 1);
      if (kind !== BigInt(StateItemKind.TRIE_NODE) && kind !== BigInt(StateItemKind.CODE))
        throw new DecodeError(
          `invalid state items request: item ${i} has kind ${kind}, 0 (trie node) or 1 (code) allowed`,
        );
      const hash = entry[1]!;
      if (!(hash instanceof Uint8Array) || hash.length !== 32)
        throw new DecodeError(`invalid state items request: the hash of item ${i} is not 32 bytes`);
      return { hash, code: kind === BigInt(StateItemKind.CODE) };
    });
  },
  itemsAsked: (items) => items.length,
  tokens: (items) => Math.ceil(items.length / STATE_ITEMS_PER_TOKEN),
  serve: async (source, items) => {
    const found = await source.stateItems(items, MAX_STATE_RESPONSE_BYTES);
    // The source's answer is bounded again here: a prefix of the items, within the bytes.
    const out: Uint8Array[] = [];
    let bytes = 0;
    for (const value of found.slice(0, items.length)) {
      const answer = value ?? new Uint8Array();
      if (out.length > 0 && bytes + answer.length > MAX_STATE_RESPONSE_BYTES) break;
      out.push(answer);
      bytes += answer.length;
    }
    return out;
  },
  decodeItem: (bytes) => bytes,
  checkResponse: () => undefined,
};

const SPECS: Specs = {
  headers_by_range: headersByRange,
  headers_by_hash: byHash(
    "headers by hash",
    MAX_HEADERS_PER_REQUEST,
    async (source, hash) => {
      const header = await source.headerByHash(hash);
      return header === undefined ? undefined : encodeHeader(header);
    },
    decodeHeader,
    (header, hash) => equalBytes(headerHash(header), hash),
  ),
  bodies_by_hash: byHash(
    "bodies by hash",
    MAX_BODIES_PER_REQUEST,
    async (source, hash) => {
      const body = await source.bodyByHash(hash);
      return body === undefined ? undefined : encodeBody(body);
    },
    (bytes) => decodeBody(bytes),
  ),
  receipts_by_hash: byHash(
    "receipts by hash",
    MAX_RECEIPTS_PER_REQUEST,
    async (source, hash) => {
      const receipts = await source.receiptsByHash(hash);
      return receipts === undefined ? undefined : encodeReceiptList(receipts);
    },
    decodeReceiptList,
  ),
  state_items: stateItems,
};

/** The spec of a request protocol. */
export function requestSpec<P extends RequestProtocol>(
  protocol: P,
): RequestSpec<RequestTypes[P]["request"], RequestTypes[P]["response"][number]> {
  return SPECS[protocol] as RequestSpec<
    RequestTypes[P]["request"],
    RequestTypes[P]["response"][number]
  >;
}

export const REQUEST_PROTOCOLS: readonly RequestProtocol[] = Object.freeze(
  Object.keys(SPECS) as RequestProtocol[],
);

function checkCount(count: number, max: number, what: string): void {
  if (count < 1 || count > max)
    throw new DecodeError(`invalid ${what} request: asks for ${count}, from 1 to ${max} allowed`);
}

/** The first byte of every response chunk. */
export const ResultCode = {
  OK: 0,
  INVALID_REQUEST: 1,
  SERVER_ERROR: 2,
  RATE_LIMITED: 3,
} as const;
export type ResultCode = (typeof ResultCode)[keyof typeof ResultCode];

/** What `req` costs in the per-peer rate limit's tokens (the server's and a client's own pacing). */
export function requestTokens<P extends RequestProtocol>(
  protocol: P,
  req: RequestTypes[P]["request"],
): number {
  const spec = requestSpec(protocol);
  return spec.tokens?.(req) ?? spec.itemsAsked(req);
}
