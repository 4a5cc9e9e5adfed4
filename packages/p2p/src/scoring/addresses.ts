import { BlockList, isIP } from "node:net";

/** A single address or a CIDR block, as `sco_banAddress` takes it. */
export interface AddressBlock {
  /** Normalized text: `10.0.0.1`, `10.0.0.0/8`, `fd00::/8`. */
  readonly text: string;
  readonly address: string;
  readonly family: "ipv4" | "ipv6";
  /** Undefined for a single address. */
  readonly prefix: number | undefined;
}

/**
 * Parses an IP address or `address/bits`; `undefined` when it is neither. The address of a
 * CIDR block is kept as given (`10.1.2.3/8` matches all of 10.0.0.0/8).
 */
export function parseAddressBlock(text: string): AddressBlock | undefined {
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  const address = slash === -1 ? trimmed : trimmed.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return undefined;
  const family = version === 4 ? "ipv4" : "ipv6";
  const normalized = normalizeAddress(address);
  if (slash === -1) return { text: normalized, address: normalized, family, prefix: undefined };
  const bits = trimmed.slice(slash + 1);
  const max = version === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return undefined;
  const prefix = Number(bits);
  return { text: `${normalized}/${prefix}`, address: normalized, family, prefix };
}

/** IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) are their IPv4 address. */
export function normalizeAddress(address: string): string {
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped === null ? lower : mapped[1]!;
}

/** A set of banned addresses and blocks that answers "is this address banned?". */
export class AddressSet {
  readonly #blocks = new Map<string, AddressBlock>();
  #list: BlockList | undefined;

  add(block: AddressBlock): boolean {
    if (this.#blocks.has(block.text)) return false;
    this.#blocks.set(block.text, block);
    this.#list = undefined;
    return true;
  }

  delete(block: AddressBlock): boolean {
    const removed = this.#blocks.delete(block.text);
    if (removed) this.#list = undefined;
    return removed;
  }

  has(address: string): boolean {
    const normalized = normalizeAddress(address);
    const version = isIP(normalized);
    if (version === 0) return false;
    this.#list ??= this.#build();
    return this.#list.check(normalized, version === 4 ? "ipv4" : "ipv6");
  }

  /** Single addresses first, then blocks, as the reference node lists them. */
  list(): string[] {
    const all = [...this.#blocks.values()];
    return [
      ...all.filter((b) => b.prefix === undefined).map((b) => b.text),
      ...all.filter((b) => b.prefix !== undefined).map((b) => b.text),
    ];
  }

  get size(): number {
    return this.#blocks.size;
  }

  #build(): BlockList {
    const list = new BlockList();
    for (const b of this.#blocks.values()) {
      if (b.prefix === undefined) list.addAddress(b.address, b.family);
      else list.addSubnet(b.address, b.prefix, b.family);
    }
    return list;
  }
}
