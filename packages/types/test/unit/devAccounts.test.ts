import { describe, expect, it } from "vitest";
import {
  bytesToHex,
  DEV_MNEMONIC,
  deriveDevAccounts,
  hexToBytes,
  keccak256,
  privateKeyToAddress,
} from "../../src/index.js";

const hex = (bytes: Uint8Array) => bytesToHex(bytes);

describe("privateKeyToAddress", () => {
  it.each([
    // Hardhat and Anvil account #0.
    [
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
      "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
    ],
    // The reference node's regtest "cow" account.
    [
      "0xc85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4",
      "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826",
    ],
  ])("maps %s to %s", (key, address) => {
    const result = privateKeyToAddress(hexToBytes(key));
    expect(result).toHaveLength(20);
    expect(hex(result)).toBe(address);
  });
});

describe("deriveDevAccounts", () => {
  const accounts = deriveDevAccounts();

  it("uses the Hardhat and Anvil mnemonic", () => {
    expect(DEV_MNEMONIC).toBe("test test test test test test test test test test test junk");
  });

  it("puts the ten mnemonic accounts first, then the reference node's ten", () => {
    expect(accounts).toHaveLength(20);
    expect(accounts.map((a) => a.label)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `m/44'/60'/0'/0/${i}`),
      "keccak256(cow)",
      ...Array.from({ length: 9 }, (_, i) => `keccak256(cow${i + 1})`),
    ]);
  });

  it("derives the mnemonic accounts at m/44'/60'/0'/0/i", () => {
    expect(hex(accounts[0]!.address)).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
    expect(hex(accounts[0]!.privateKey)).toBe(
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    );
    expect(hex(accounts[1]!.address)).toBe(
      "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".toLowerCase(),
    );
    expect(hex(accounts[9]!.address)).toBe("0xa0ee7a142d267c1f36714e4a8f75612f20a79720");
  });

  it("derives the reference node's accounts from keccak256 of cow, cow1 … cow9", () => {
    expect(hex(accounts[10]!.address)).toBe("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826");
    expect(hex(accounts[11]!.address)).toBe("0x7986b3df570230288501eea3d890bd66948c9b79");
    for (let i = 0; i < 10; i++) {
      const seed = i === 0 ? "cow" : `cow${i}`;
      expect(accounts[10 + i]!.privateKey).toEqual(keccak256(new TextEncoder().encode(seed)));
    }
  });

  it("pairs each address with its key, with no duplicates", () => {
    for (const account of accounts) {
      expect(account.privateKey).toHaveLength(32);
      expect(privateKeyToAddress(account.privateKey)).toEqual(account.address);
    }
    expect(new Set(accounts.map((a) => hex(a.address))).size).toBe(20);
  });

  it("computes the accounts once and freezes them", () => {
    expect(deriveDevAccounts()).toBe(accounts);
    expect(Object.isFrozen(accounts)).toBe(true);
    expect(Object.isFrozen(accounts[0])).toBe(true);
  });
});
