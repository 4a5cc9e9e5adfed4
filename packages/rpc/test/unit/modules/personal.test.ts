import { type Address, bytesToHex } from "@nodex/types";
import { describe, expect, it } from "vitest";
import {
  Dispatcher,
  MethodRegistry,
  WalletError,
  WalletErrorCode,
  type WalletService,
} from "../../../src/index.js";
import { ethAccountsModule } from "../../../src/modules/ethAccounts.js";
import { personalModule } from "../../../src/modules/personal.js";
import { fakeServices, logger } from "../fixtures.js";

const ACCOUNT = new Uint8Array(20).fill(0x11) as Address;

/** A wallet that records what it was asked. */
function recordingWallet() {
  const calls: unknown[][] = [];
  const wallet: WalletService = {
    list: () => [ACCOUNT],
    newAccount: async (pass) => {
      calls.push(["newAccount", pass]);
      return ACCOUNT;
    },
    importRawKey: async (key, pass) => {
      calls.push(["importRawKey", bytesToHex(key), pass]);
      return ACCOUNT;
    },
    newAccountWithSeed: (seed) => {
      calls.push(["seed", seed]);
      return ACCOUNT;
    },
    unlock: async (address, pass, seconds) => {
      calls.push(["unlock", bytesToHex(address), pass, seconds]);
      return pass === "right";
    },
    lock: () => true,
    dumpRawKey: () => {
      throw new WalletError(WalletErrorCode.LOCKED, "authentication needed: password or unlock");
    },
    signMessage: () => new Uint8Array(65).fill(1),
    signTransaction: () => Promise.reject(new Error("not in this test")),
  };
  return { wallet, calls };
}

function setup() {
  const { wallet, calls } = recordingWallet();
  const registry = new MethodRegistry(
    [ethAccountsModule(wallet, undefined), personalModule(wallet, undefined)],
    { enabled: new Set(["eth", "personal"]), hostedOff: new Set() },
  );
  const dispatcher = new Dispatcher(
    { maxBatchSize: 10, maxResponseBytes: 100_000, timeoutMs: 0 },
    { registry, services: fakeServices({ wallet }), logger },
  );
  const run = async (method: string, params: unknown[], hosted = false) =>
    JSON.parse(
      (await dispatcher.dispatch(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }), {
        hosted,
      }))!,
    );
  return { run, calls };
}

const addr = bytesToHex(ACCOUNT);

describe("personal", () => {
  it("takes the unlock duration in seconds: default 300, a number or a QUANTITY", async () => {
    const { run, calls } = setup();
    expect((await run("personal_unlockAccount", [addr, "right"])).result).toBe(true);
    expect((await run("personal_unlockAccount", [addr, "wrong", 60])).result).toBe(false);
    expect((await run("personal_unlockAccount", [addr, "right", "0x0"])).result).toBe(true);
    expect(calls).toEqual([
      ["unlock", addr, "right", 300],
      ["unlock", addr, "wrong", 60],
      ["unlock", addr, "right", 0],
    ]);
    expect((await run("personal_unlockAccount", [addr, "right", -1])).error.code).toBe(-32602);
    expect((await run("personal_unlockAccount", [addr, "right", 1.5])).error.code).toBe(-32602);
  });

  it("imports keys with or without 0x and never quotes a malformed key back", async () => {
    const { run, calls } = setup();
    const key = "ab".repeat(32);
    await run("personal_importRawKey", [key, "pw"]);
    await run("personal_importRawKey", [`0x${key}`, "pw"]);
    expect(calls).toEqual([
      ["importRawKey", `0x${key}`, "pw"],
      ["importRawKey", `0x${key}`, "pw"],
    ]);
    const bad = await run("personal_importRawKey", [`0x${"cd".repeat(31)}`, "pw"]);
    expect(bad.error).toEqual({
      code: -32602,
      message: "invalid argument 0: a private key is 32 bytes as 64 hex digits",
    });
  });

  it("answers wallet errors with -32000", async () => {
    const { run } = setup();
    expect((await run("personal_dumpRawKey", [addr])).error).toEqual({
      code: -32000,
      message: "authentication needed: password or unlock",
    });
  });

  it("eth_sign holds no keys in hosted mode", async () => {
    const { run } = setup();
    expect((await run("eth_sign", [addr, "0x00"])).result).toBe(`0x${"01".repeat(65)}`);
    expect((await run("eth_sign", [addr, "0x00"], true)).error).toEqual({
      code: -32000,
      message: "unknown account",
    });
  });
});
