import { describe, expect, it } from "vitest";
import { syncingJson } from "../../src/subscriptions.js";
import { syncStatusJson } from "../../src/syncStatus.js";

describe("eth_syncing's object", () => {
  it("is the spec's three quantities during a full sync", () => {
    expect(syncStatusJson({ startingBlock: 0n, currentBlock: 10n, highestBlock: 5000n })).toEqual({
      startingBlock: "0x0",
      currentBlock: "0xa",
      highestBlock: "0x1388",
    });
  });

  it("adds the phase, the pivot and the state done during a snapshot sync", () => {
    const status = {
      startingBlock: 0n,
      currentBlock: 0n,
      highestBlock: 5064n,
      snap: {
        phase: "state" as const,
        pivotBlock: 5000n,
        headers: 5000n,
        accounts: 12_000n,
        slots: 3_000n,
        codes: 4n,
        nodes: 20_000n,
        pending: 1_500n,
        bytes: 2_000_000n,
        secondsLeft: 12.4,
      },
    };
    expect(syncStatusJson(status)).toEqual({
      startingBlock: "0x0",
      currentBlock: "0x0",
      highestBlock: "0x13c8",
      syncMode: "snap",
      phase: "state",
      pivotBlock: "0x1388",
      syncedHeaders: "0x1388",
      syncedAccounts: "0x2ee0",
      syncedStorage: "0xbb8",
      syncedBytecodes: "0x4",
      syncedStateBytes: "0x1e8480",
      pulledStates: "0x4e20",
      knownStates: "0x53fc",
      estimatedSecondsLeft: "0xc",
    });
    // The subscription's notification carries the same object.
    expect(syncingJson(status)).toEqual({ syncing: true, status: syncStatusJson(status) });
    expect(syncingJson(false)).toEqual({ syncing: false });
  });
});
