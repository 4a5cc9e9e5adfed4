import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import type { Logger } from "@nodex/types";
import type { BanState } from "./peerScoring.js";

const EMPTY: BanState = { manual: [], punished: [] };

/**
 * The ban list in the datadir, as JSON. Written whole to a temporary file, synced and renamed
 * over the old one, so a crash leaves either the old list or the new one. A missing file is an
 * empty list; an unreadable one is logged, set aside as `<file>.corrupt`, and read as empty.
 */
export function loadBans(path: string, logger: Logger): BanState {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return EMPTY;
    throw err;
  }
  try {
    return validate(JSON.parse(text));
  } catch (err) {
    const aside = `${path}.corrupt`;
    renameSync(path, aside);
    logger.warn("ban list unreadable: starting without bans", {
      file: path,
      movedTo: aside,
      reason: err instanceof Error ? err.message : String(err),
    });
    return EMPTY;
  }
}

export function saveBans(path: string, state: BanState): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, `${JSON.stringify(state, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function validate(value: unknown): BanState {
  if (typeof value !== "object" || value === null) throw new Error("not a JSON object");
  const { manual, punished } = value as Record<string, unknown>;
  if (!Array.isArray(manual) || !manual.every((m) => typeof m === "string"))
    throw new Error("manual: expected an array of strings");
  if (
    !Array.isArray(punished) ||
    !punished.every(
      (p) =>
        typeof p === "object" &&
        p !== null &&
        typeof (p as Record<string, unknown>).address === "string" &&
        Number.isSafeInteger((p as Record<string, unknown>).until) &&
        Number.isSafeInteger((p as Record<string, unknown>).punishments) &&
        [undefined, "connections"].includes((p as Record<string, unknown>).reason as string),
    )
  )
    throw new Error("punished: expected an array of {address, until, punishments, reason?}");
  return { manual, punished } as BanState;
}
