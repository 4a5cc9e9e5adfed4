import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex, hexToBytes, type LogContext, nullLogger } from "@nodex/types";
import { Wallet as EthersWallet, encryptKeystoreJson } from "ethers";
import { afterAll, describe, expect, it } from "vitest";
import {
  decryptKey,
  encryptKey,
  Keystore,
  KeystoreErrorCode,
  keyFileName,
} from "../../../src/accounts/keystore.js";

const KEY = hexToBytes("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318");
const ADDRESS = "0x2c7536e3605d9c16a7a3d7b1898e529396a65c23";
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "nodex-keystore-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("v3 key files", () => {
  it("round-trips a key with the light parameters", async () => {
    const json = await encryptKey(KEY, "secret", "light");
    expect(json.address).toBe(ADDRESS.slice(2));
    expect(json.version).toBe(3);
    expect(json.crypto.kdfparams).toMatchObject({ n: 4096, r: 8, p: 6, dklen: 32 });
    expect(bytesToHex(await decryptKey(json, "secret"))).toBe(bytesToHex(KEY));
  });

  it("writes the standard scrypt parameters when asked", async () => {
    const json = await encryptKey(KEY, "secret", "standard");
    expect(json.crypto.kdfparams).toMatchObject({ n: 262144, r: 8, p: 1 });
    expect(bytesToHex(await decryptKey(json, "secret"))).toBe(bytesToHex(KEY));
  }, 30_000);

  it("refuses a wrong passphrase with its own code, naming no secret", async () => {
    const json = await encryptKey(KEY, "secret", "light");
    const err = await decryptKey(json, "wrong").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: KeystoreErrorCode.WRONG_PASSPHRASE });
    expect(String((err as Error).message)).not.toMatch(/secret|wrong|4c0883/);
  });

  it("ethers decrypts the files it reads from us", async () => {
    const json = await encryptKey(KEY, "pass phrase ü", "light");
    const wallet = await EthersWallet.fromEncryptedJson(JSON.stringify(json), "pass phrase ü");
    expect(wallet.privateKey).toBe(bytesToHex(KEY));
    expect(wallet.address.toLowerCase()).toBe(ADDRESS);
  });

  it("decrypts the files ethers writes", async () => {
    const account = new EthersWallet(bytesToHex(KEY));
    // Wallet.encrypt with its standard cost, and encryptKeystoreJson with a cheaper one.
    const standard = await account.encrypt("from ethers");
    expect(bytesToHex(await decryptKey(JSON.parse(standard), "from ethers"))).toBe(bytesToHex(KEY));
    const text = await encryptKeystoreJson(account, "from ethers", { scrypt: { N: 1024 } });
    expect(bytesToHex(await decryptKey(JSON.parse(text), "from ethers"))).toBe(bytesToHex(KEY));
    const wrong = await decryptKey(JSON.parse(text), "nope").catch((e: unknown) => e);
    expect(wrong).toMatchObject({ code: KeystoreErrorCode.WRONG_PASSPHRASE });
  }, 30_000);

  it("reports malformed files as invalid, not as a crash", async () => {
    const json = await encryptKey(KEY, "secret", "light");
    const cases: unknown[] = [
      null,
      { ...json, version: 2 },
      { ...json, crypto: { ...json.crypto, mac: "zz" } },
      { ...json, crypto: { ...json.crypto, cipher: "aes-256-gcm" } },
      { ...json, crypto: { ...json.crypto, kdf: "argon2" } },
      { ...json, crypto: { ...json.crypto, kdfparams: { ...json.crypto.kdfparams, n: 3 } } },
      { ...json, crypto: { ...json.crypto, kdfparams: { ...json.crypto.kdfparams, n: 1 << 24 } } },
      { ...json, address: "00".repeat(20) },
    ];
    for (const bad of cases) {
      await expect(decryptKey(bad, "secret")).rejects.toMatchObject({
        code: KeystoreErrorCode.INVALID_FILE,
      });
    }
  });

  it("names files as geth does", () => {
    const name = keyFileName(
      hexToBytes(ADDRESS) as never,
      new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)),
    );
    expect(name).toBe("UTC--2024-01-02T03-04-05.006Z--2c7536e3605d9c16a7a3d7b1898e529396a65c23");
  });
});

describe("Keystore", () => {
  it("writes one 0600 file per account and lists it", async () => {
    const dir = join(tempDir(), "keystore");
    const store = new Keystore({ dir, kdf: "light" }, { logger: nullLogger });
    expect(await store.list()).toEqual([]);
    const entry = await store.store(KEY, "secret");
    expect(bytesToHex(entry.address)).toBe(ADDRESS);
    const names = readdirSync(dir);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^UTC--\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z--2c7536e3/);
    expect(statSync(entry.path).mode & 0o777).toBe(0o600);
    expect(readFileSync(entry.path, "utf8")).not.toContain(bytesToHex(KEY).slice(2));
    expect((await store.list()).map((e) => bytesToHex(e.address))).toEqual([ADDRESS]);
    expect(bytesToHex(await store.load(entry.path, "secret"))).toBe(bytesToHex(KEY));
  });

  it("skips and reports files that are not key files", async () => {
    const dir = tempDir();
    const warnings: LogContext[] = [];
    const logger = { ...nullLogger, warn: (_m: string, c?: LogContext) => warnings.push(c ?? {}) };
    const store = new Keystore({ dir, kdf: "light" }, { logger });
    const good = await store.store(KEY, "secret");
    writeFileSync(join(dir, "UTC--broken"), "{not json");
    writeFileSync(join(dir, "UTC--wrong-shape"), JSON.stringify({ version: 3 }));
    expect((await store.list()).map((e) => e.path)).toEqual([good.path]);
    expect(warnings.map((w) => w.file).sort()).toEqual(["UTC--broken", "UTC--wrong-shape"]);
    writeFileSync(good.path, "garbage");
    await expect(store.load(good.path, "secret")).rejects.toMatchObject({
      code: KeystoreErrorCode.INVALID_FILE,
    });
  });
});
