import { mkdirSync } from "node:fs";
import {
  type ApiKeyRecord,
  createSharedKey,
  hashKey,
  KeyFileError,
  keyRegistryPath,
  keyUsagePath,
  newApiKey,
  newKeyId,
  RedisStore,
  readKeyRegistry,
  readSharedKeys,
  readSharedUsage,
  readUsageFile,
  redactRedisUrl,
  revokeSharedKey,
  type ScopeUsage,
  updateKeyRegistry,
  utcDay,
} from "@nodex/rpc";
import { nullLogger } from "@nodex/types";
import type { KeysCommand } from "./config.js";

/** What `nodex keys list` shows of a key: never the key, nor its digest. */
export interface KeyListing {
  readonly id: string;
  readonly name: string;
  readonly status: "active" | "revoked";
  readonly rate: number | null;
  readonly daily: number | null;
  readonly methods: readonly string[] | null;
  readonly deny: readonly string[] | null;
  readonly allow: readonly string[] | null;
  readonly created: string;
  readonly revoked: string | null;
  readonly lastUsed: string | null;
  readonly unitsToday: number;
}

/**
 * `nodex keys create|list|revoke`: on the registry in Redis with `--redis` (the one the replicas
 * of the endpoint follow), else on `<datadir>/api-keys.json`.
 */
export function runKeys(
  command: KeysCommand,
  out: (text: string) => void = (t) => process.stdout.write(t),
  err: (text: string) => void = (t) => process.stderr.write(t),
): number | Promise<number> {
  return command.config.redis === undefined
    ? runKeysCommand(command, out, err)
    : runSharedKeysCommand(command, command.config.redis, out, err);
}

/**
 * `nodex keys` on the registry in Redis (under the network's prefix): every replica applies a
 * change at once (pub/sub), within a second at worst. Refused (1) when Redis cannot be reached.
 */
export async function runSharedKeysCommand(
  command: KeysCommand,
  url: string,
  out: (text: string) => void = (t) => process.stdout.write(t),
  err: (text: string) => void = (t) => process.stderr.write(t),
): Promise<number> {
  const where = redactRedisUrl(url);
  const store = new RedisStore(
    { url, network: command.config.network.name, connectTimeoutMs: 5_000 },
    nullLogger,
  );
  try {
    await store.connect();
    if (!store.connected()) {
      err(
        `nodex keys ${command.action}: Redis at ${where} is not reachable${command.action === "list" ? "" : "; nothing was changed"}\n`,
      );
      return 1;
    }
    if (command.action === "create") {
      const key = newApiKey();
      for (;;) {
        const record = recordOf(command, key, newKeyId());
        if (await createSharedKey(store, record)) {
          out(`id:  ${record.id}\nkey: ${key}\n`);
          err("The key is shown this once: Redis keeps only its SHA-256 digest.\n");
          return 0;
        }
      }
    }
    if (command.action === "revoke") {
      const done = await revokeSharedKey(store, command.id, new Date().toISOString());
      if (done === "unknown") {
        err(
          `nodex keys revoke: no key has the id ${command.id} in Redis at ${where} (${store.prefix})\n`,
        );
        return 1;
      }
      out(
        done === "already"
          ? `${command.id} was revoked already\n`
          : `${command.id} revoked: every replica refuses it within a second\n`,
      );
      return 0;
    }
    const records = await readSharedKeys(store);
    const usage = await readSharedUsage(
      store,
      records.map((r) => r.id),
    );
    const listing = records.map((k) => listingOf(k, usage.get(k.id)));
    if (command.json) out(`${JSON.stringify(listing, null, 2)}\n`);
    else out(table(listing));
    return 0;
  } catch (e) {
    err(`nodex keys ${command.action}: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

function recordOf(
  command: Extract<KeysCommand, { action: "create" }>,
  key: string,
  id: string,
): ApiKeyRecord {
  return {
    id,
    name: command.name,
    sha256: hashKey(key),
    created: new Date().toISOString(),
    ...(command.rate === undefined ? {} : { rate: command.rate }),
    ...(command.daily === undefined ? {} : { daily: command.daily }),
    ...(command.methods === undefined ? {} : { methods: command.methods }),
    ...(command.deny === undefined ? {} : { deny: command.deny }),
    ...(command.allow === undefined ? {} : { allow: command.allow }),
  };
}

/**
 * `nodex keys create|list|revoke` on `<datadir>/api-keys.json`. The registry is changed under
 * its lock and written atomically; a running node of the datadir reads it again within a second.
 * Returns the exit code: 0 done, 1 refused.
 */
export function runKeysCommand(
  command: KeysCommand,
  out: (text: string) => void = (t) => process.stdout.write(t),
  err: (text: string) => void = (t) => process.stderr.write(t),
): number {
  const datadir = command.config.datadir;
  const path = keyRegistryPath(datadir);
  try {
    if (command.action === "create") {
      mkdirSync(datadir, { recursive: true });
      const key = newApiKey();
      const record = updateKeyRegistry(path, (registry) => {
        let id = newKeyId();
        while (registry.keys.some((k) => k.id === id)) id = newKeyId();
        const record = recordOf(command, key, id);
        return { registry: { version: 1, keys: [...registry.keys, record] }, result: record };
      });
      out(`id:  ${record.id}\nkey: ${key}\n`);
      err("The key is shown this once: the node keeps only its SHA-256 digest.\n");
      return 0;
    }
    if (command.action === "revoke") {
      const done = updateKeyRegistry(path, (registry) => {
        const found = registry.keys.find((k) => k.id === command.id);
        if (found === undefined || found.revoked !== undefined)
          return { registry, result: found === undefined ? "unknown" : "already" };
        const revoked = new Date().toISOString();
        return {
          registry: {
            version: 1,
            keys: registry.keys.map((k) => (k.id === command.id ? { ...k, revoked } : k)),
          },
          result: "revoked",
        };
      });
      if (done === "unknown") {
        err(`nodex keys revoke: no key has the id ${command.id} in ${path}\n`);
        return 1;
      }
      out(
        done === "already"
          ? `${command.id} was revoked already\n`
          : `${command.id} revoked: a running node refuses it within a second\n`,
      );
      return 0;
    }
    const usage = readUsageFile(keyUsagePath(datadir));
    const listing = readKeyRegistry(path).keys.map((k) => listingOf(k, usage.get(k.id)));
    if (command.json) out(`${JSON.stringify(listing, null, 2)}\n`);
    else out(table(listing));
    return 0;
  } catch (e) {
    if (!(e instanceof KeyFileError) && (e as NodeJS.ErrnoException).code === undefined) throw e;
    err(`nodex keys ${command.action}: ${(e as Error).message}\n`);
    return 1;
  }
}

function listingOf(k: ApiKeyRecord, usage: ScopeUsage | undefined): KeyListing {
  const today = usage !== undefined && usage.day === utcDay(Date.now());
  return {
    id: k.id,
    name: k.name,
    status: k.revoked === undefined ? "active" : "revoked",
    rate: k.rate ?? null,
    daily: k.daily ?? null,
    methods: k.methods ?? null,
    deny: k.deny ?? null,
    allow: k.allow ?? null,
    created: k.created,
    revoked: k.revoked ?? null,
    lastUsed:
      usage === undefined || usage.lastUsed === 0 ? null : new Date(usage.lastUsed).toISOString(),
    unitsToday: today ? usage.unitsToday : 0,
  };
}

function table(rows: readonly KeyListing[]): string {
  if (rows.length === 0) return "no API keys\n";
  const head = [
    "ID",
    "NAME",
    "STATUS",
    "RATE/S",
    "DAILY",
    "METHODS",
    "CREATED",
    "LAST USED",
    "UNITS TODAY",
  ];
  const cells = rows.map((r) => [
    r.id,
    r.name,
    r.status,
    r.rate === null ? "-" : String(r.rate),
    r.daily === null ? "-" : String(r.daily),
    [
      r.methods === null ? "" : `only ${r.methods.join(",")}`,
      r.deny === null ? "" : `not ${r.deny.join(",")}`,
      r.allow === null ? "" : `+${r.allow.join(",")}`,
    ]
      .filter((s) => s !== "")
      .join(" ") || "all",
    r.created,
    r.lastUsed ?? "never",
    String(r.unitsToday),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return `${[line(head), ...cells.map(line)].join("\n")}\n`;
}
