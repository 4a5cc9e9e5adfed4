import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WalletErrorCode } from "@nodex/rpc";
import {
  type Address,
  bytesToHex,
  decodeTransaction,
  deriveDevAccounts,
  hexToBytes,
  keccak256,
  nullLogger,
  privateKeyToAddress,
} from "@nodex/types";
import { verifyMessage } from "ethers";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { Keystore } from "../../../src/accounts/keystore.js";
import { Wallet } from "../../../src/accounts/wallet.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

let clock = 1_000_000;
let dir: string;
const open = (devAccounts = deriveDevAccounts().slice(0, 2)) =>
  Wallet.open({
    keystore: new Keystore({ dir, kdf: "light" }, { logger: nullLogger }),
    devAccounts,
    logger: nullLogger,
    now: () => clock,
  });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "nodex-wallet-"));
  dirs.push(dir);
});

const TX = {
  nonce: 0n,
  gasPrice: 1n,
  gasLimit: 21_000n,
  to: new Uint8Array(20) as Address,
  value: 1n,
  data: new Uint8Array(),
};

describe("Wallet", () => {
  it("lists development accounts first, then keystore accounts, and keeps them after a reopen", async () => {
    const wallet = await open();
    const created = await wallet.newAccount("pw");
    const dev = deriveDevAccounts()
      .slice(0, 2)
      .map((a) => bytesToHex(a.address));
    expect(wallet.list().map(bytesToHex)).toEqual([...dev, bytesToHex(created)]);
    const again = await open();
    expect(again.list().map(bytesToHex)).toEqual([...dev, bytesToHex(created)]);
    expect(again.isUnlocked(created)).toBe(false);
  });

  it("unlocks for the given seconds, by the injected clock", async () => {
    const wallet = await open([]);
    const address = await wallet.newAccount("pw");
    expect(wallet.isUnlocked(address)).toBe(false);
    expect(await wallet.unlock(address, "bad", 60)).toBe(false);
    expect(wallet.isUnlocked(address)).toBe(false);
    expect(await wallet.unlock(address, "pw", 60)).toBe(true);
    clock += 59_999;
    expect(wallet.isUnlocked(address)).toBe(true);
    clock += 1;
    expect(wallet.isUnlocked(address)).toBe(false);
    expect(() => wallet.dumpRawKey(address)).toThrow(
      expect.objectContaining({ code: WalletErrorCode.LOCKED }),
    );
  });

  it("duration 0 unlocks until the node stops; lock ends it", async () => {
    const wallet = await open([]);
    const address = await wallet.newAccount("pw");
    expect(await wallet.unlock(address, "pw", 0)).toBe(true);
    clock += 10 * 365 * 24 * 3600 * 1000;
    expect(wallet.isUnlocked(address)).toBe(true);
    expect(wallet.lock(address)).toBe(true);
    expect(wallet.isUnlocked(address)).toBe(false);
  });

  it("imports, dumps only while unlocked, and refuses a second import", async () => {
    const wallet = await open([]);
    const key = keccak256(new TextEncoder().encode("import me"));
    const address = await wallet.importRawKey(key, "pw");
    expect(bytesToHex(address)).toBe(bytesToHex(privateKeyToAddress(key)));
    expect(() => wallet.dumpRawKey(address)).toThrow(
      expect.objectContaining({ code: WalletErrorCode.LOCKED }),
    );
    await wallet.unlock(address, "pw", 300);
    expect(bytesToHex(wallet.dumpRawKey(address))).toBe(bytesToHex(key));
    await expect(wallet.importRawKey(key, "other")).rejects.toMatchObject({
      code: WalletErrorCode.KEYSTORE,
    });
    await expect(wallet.importRawKey(new Uint8Array(32), "pw")).rejects.toMatchObject({
      code: WalletErrorCode.INVALID_KEY,
    });
  });

  it("signs messages as eth_sign (ethers verifies them); unknown accounts are refused", async () => {
    const wallet = await open();
    const dev = deriveDevAccounts()[0]!;
    const message = new TextEncoder().encode("hello nodex");
    const sig = wallet.signMessage(dev.address, message);
    expect(sig).toHaveLength(65);
    expect([27, 28]).toContain(sig[64]);
    expect(verifyMessage(message, bytesToHex(sig)).toLowerCase()).toBe(bytesToHex(dev.address));
    expect(() => wallet.signMessage(new Uint8Array(20).fill(7) as Address, message)).toThrow(
      expect.objectContaining({ code: WalletErrorCode.UNKNOWN_ACCOUNT }),
    );
  });

  it("signs a transaction with a passphrase for one call only", async () => {
    const wallet = await open([]);
    const address = await wallet.newAccount("pw");
    const signed = await wallet.signTransaction(address, TX, 33, "pw");
    const decoded = decodeTransaction(signed.raw);
    expect(bytesToHex(decoded.from)).toBe(bytesToHex(address));
    expect(decoded.chainId).toBe(33);
    expect(wallet.isUnlocked(address)).toBe(false);
    await expect(wallet.signTransaction(address, TX, 33)).rejects.toMatchObject({
      code: WalletErrorCode.LOCKED,
    });
    await expect(wallet.signTransaction(address, TX, 33, "bad")).rejects.toMatchObject({
      code: WalletErrorCode.WRONG_PASSPHRASE,
    });
  });

  it("makes seed accounts as the reference node (keccak256 of the seed), unlocked in memory", async () => {
    const wallet = await open([]);
    const address = wallet.newAccountWithSeed("cow");
    expect(bytesToHex(address)).toBe("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826");
    expect(wallet.isUnlocked(address)).toBe(true);
    expect(bytesToHex(wallet.dumpRawKey(address))).toBe(
      bytesToHex(keccak256(new TextEncoder().encode("cow"))),
    );
    expect((await open([])).list()).toEqual([]);
    expect(hexToBytes(bytesToHex(address))).toEqual(address);
  });
});
