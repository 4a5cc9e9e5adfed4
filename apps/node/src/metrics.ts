import { readdir, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { Chain } from "@nodex/chain";
import type { P2PService } from "@nodex/p2p";
import type { NodeMetrics } from "@nodex/rpc";
import type { TxPool } from "@nodex/txpool";
import { NODEX_VERSION } from "./version.js";

export interface NodeGaugeSources {
  readonly chain: Chain;
  readonly pool: TxPool;
  readonly p2p: P2PService | undefined;
  readonly datadir: string;
  readonly chainId: number;
}

/** How long a measured database size serves scrapes before the directory is read again. */
const DB_SIZE_TTL_MS = 10_000;

/** The node's gauges, read at each scrape: head, peers, sync, pool, storage and disk. */
export function registerNodeGauges(metrics: NodeMetrics, src: NodeGaugeSources): void {
  const { chain, pool, p2p } = src;
  metrics.labelledGauge("nodex_version_info", "The node's version (always 1)", "version", () => ({
    [NODEX_VERSION]: 1,
  }));
  metrics.gauge("nodex_network_chain_id", "Chain id of the node's network", () => src.chainId);
  metrics.gauge("nodex_head_block_number", "Number of the best block", () =>
    Number(chain.head.block.header.number),
  );
  metrics.gauge(
    "nodex_head_age_seconds",
    "Seconds since the best block's timestamp",
    // A development chain's blocks may carry a time ahead of the clock: 0 then.
    () => Math.max(0, Date.now() / 1000 - Number(chain.head.block.header.timestamp)),
  );
  metrics.gauge("nodex_peers", "Connected peers (status handshake done)", () =>
    p2p === undefined ? 0 : p2p.network.peers().length,
  );
  metrics.gauge("nodex_peers_best_block_number", "Highest head a connected peer reported", () => {
    const best = p2p === undefined ? undefined : bestPeerBlock(p2p);
    return best === undefined ? undefined : Number(best);
  });
  metrics.gauge("nodex_sync_active", "1 while the node syncs with a peer, else 0", () =>
    p2p !== undefined && p2p.syncing() !== false ? 1 : 0,
  );
  metrics.gauge("nodex_sync_highest_block_number", "Block the running sync goes to", () => {
    const status = p2p?.syncing();
    return status === undefined || status === false ? undefined : Number(status.highestBlock);
  });
  metrics.labelledGauge(
    "nodex_p2p_received_bytes",
    "Bytes of the answers peers gave this node's requests since it started (headers, bodies, receipts, state items), by protocol",
    "protocol",
    () => (p2p === undefined ? {} : p2p.network.receivedBytes()),
  );
  metrics.labelledGauge(
    "nodex_txpool_transactions",
    "Transactions in the pool, pending (executable) or queued (waiting for a nonce)",
    "state",
    () => {
      const { pending, queued } = pool.status();
      return { pending, queued };
    },
  );
  metrics.gauge("nodex_storage_writable", "1 while the database takes writes, else 0", () =>
    chain.storage().writable ? 1 : 0,
  );
  const dbPath = join(src.datadir, "db");
  let measured: { at: number; bytes: number } | undefined;
  metrics.gauge("nodex_db_size_bytes", "Size on disk of the database directory", async () => {
    const now = Date.now();
    if (measured === undefined || now - measured.at > DB_SIZE_TTL_MS) {
      measured = { at: now, bytes: await directorySize(dbPath) };
    }
    return measured.bytes;
  });
  metrics.gauge(
    "nodex_datadir_free_bytes",
    "Free space of the datadir's file system, to an unprivileged user",
    async () => {
      try {
        const s = await statfs(src.datadir);
        return Number(s.bavail) * Number(s.bsize);
      } catch {
        return undefined;
      }
    },
  );
}

/** The highest head number the connected peers reported (handshake or later status). */
export function bestPeerBlock(p2p: P2PService): bigint | undefined {
  let best: bigint | undefined;
  for (const peer of p2p.network.peers()) {
    const n = peer.status.bestNumber;
    if (best === undefined || n > best) best = n;
  }
  return best;
}

/** Bytes of the files under `dir` (files vanishing meanwhile, as LevelDB compacts, count 0). */
async function directorySize(dir: string): Promise<number> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await directorySize(path);
    else if (entry.isFile()) {
      try {
        total += (await stat(path)).size;
      } catch {
        // Removed by a compaction since the listing.
      }
    }
  }
  return total;
}
