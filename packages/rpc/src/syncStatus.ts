import { encodeQuantity } from "@nodex/types";
import type { SyncStatus } from "./services.js";

/**
 * `eth_syncing`'s object: the spec's three block numbers and, during a snapshot sync, where it
 * stands (geth's names where geth has one: `syncedAccounts`, `syncedStorage`, `syncedBytecodes`,
 * `pulledStates`, `knownStates`), as quantities, with the phase and the pivot.
 */
export function syncStatusJson(status: Exclude<SyncStatus, false>): Record<string, unknown> {
  const json: Record<string, unknown> = {
    startingBlock: encodeQuantity(status.startingBlock),
    currentBlock: encodeQuantity(status.currentBlock),
    highestBlock: encodeQuantity(status.highestBlock),
  };
  const snap = status.snap;
  if (snap === undefined) return json;
  json.syncMode = "snap";
  json.phase = snap.phase;
  json.pivotBlock = encodeQuantity(snap.pivotBlock);
  json.syncedHeaders = encodeQuantity(snap.headers);
  json.syncedAccounts = encodeQuantity(snap.accounts);
  json.syncedStorage = encodeQuantity(snap.slots);
  json.syncedBytecodes = encodeQuantity(snap.codes);
  json.syncedStateBytes = encodeQuantity(snap.bytes);
  json.pulledStates = encodeQuantity(snap.nodes);
  json.knownStates = encodeQuantity(snap.nodes + snap.pending);
  if (snap.secondsLeft !== undefined)
    json.estimatedSecondsLeft = encodeQuantity(BigInt(Math.max(0, Math.round(snap.secondsLeft))));
  return json;
}
