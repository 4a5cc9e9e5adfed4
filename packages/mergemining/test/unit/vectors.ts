// Loads the copied vector files of ../vectors (provenance in ../vectors/README.md).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "vectors");

export function readVector(name: string): string {
  return readFileSync(join(dir, name), "utf8");
}

export function hex(s: string): Uint8Array {
  return Uint8Array.from(Buffer.from(s.replace(/^0x/, ""), "hex"));
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}

/** bitcoinj text checkpoints: 12-byte chain work ‖ 4-byte height ‖ 80-byte header per line. */
export function mainnetCheckpoints(): { height: number; header: Uint8Array }[] {
  const lines = readVector("bitcoin-mainnet-checkpoints.txt").trim().split("\n");
  const count = Number(lines[2]);
  const rows = lines.slice(3).map((l) => {
    const b = Uint8Array.from(Buffer.from(l.trim(), "base64"));
    if (b.length !== 96) throw new Error(`checkpoint line of ${b.length} bytes`);
    return {
      height: new DataView(b.buffer).getUint32(12),
      header: b.slice(16),
    };
  });
  if (rows.length !== count) throw new Error(`want ${count} checkpoints, got ${rows.length}`);
  return rows;
}

export interface JsBlock {
  description: string;
  hex: string;
  id: string;
  hash: string;
  version: number;
  prevHash: string;
  merkleRoot: string;
  timestamp: number;
  bits: number;
  nonce: number;
  valid: boolean;
  height?: number;
  witnessCommit?: string;
}

/** bitcoinjs-lib test/fixtures/block.json. */
export function bitcoinjsBlocks(): {
  targets: { bits: string; expected: string }[];
  valid: JsBlock[];
  invalid: { exception: string; hex: string }[];
} {
  return JSON.parse(readVector("bitcoinjs-block.json"));
}

/** bitcoinjs-lib test/fixtures/core/blocks.json (Bitcoin Core test data). */
export function coreBlocks(): { id: string; transactions: number; hex: string }[] {
  return JSON.parse(readVector("bitcoinjs-core-blocks.json"));
}

/** Bitcoin Core src/test/data/blockfilters.json, row of testnet3 block 926485. */
export function testnetBlock926485(): { height: number; id: string; block: Uint8Array } {
  const rows = JSON.parse(readVector("bitcoin-core-testnet-926485.json")) as unknown[][];
  const row = rows[1]!;
  return { height: row[0] as number, id: row[1] as string, block: hex(row[2] as string) };
}

/** rskj doc/rpc/components/schemas/BlockExampleResultTransactionHash.json (block 0x1b4). */
export function rskBlock0x1b4() {
  const v = JSON.parse(readVector("rsk-block-0x1b4.json")).BlockExampleResultTransactionHash.value;
  return {
    hashForMergedMining: hex(v.hashForMergedMining),
    difficulty: BigInt(v.difficulty),
    timestamp: BigInt(v.timestamp),
    bitcoinHeader: hex(v.bitcoinMergedMiningHeader),
    coinbase: hex(v.bitcoinMergedMiningCoinbaseTransaction),
    merkleProof: hex(v.bitcoinMergedMiningMerkleProof),
  };
}
