import { describe, expect, it } from "vitest";
import {
  bytesToHex,
  DEV_MNEMONIC,
  deriveDevAccounts,
  isNetworkName,
  NETWORK_NAMES,
  NETWORKS,
  networkByChainId,
  privateKeyToAddress,
} from "../../src/index.js";

describe("network presets", () => {
  it.each([
    ["mainnet", 30, false],
    ["testnet", 31, false],
    ["devnet", 32, true],
    ["regtest", 33, true],
  ] as const)("%s has chain id %i", (name, chainId, dev) => {
    const preset = NETWORKS[name];
    expect(preset.name).toBe(name);
    expect(preset.chainId).toBe(chainId);
    expect(preset.devAccounts).toBe(dev);
    expect(networkByChainId(chainId)).toBe(preset);
    expect(preset.defaultModules.includes("evm")).toBe(dev);
    expect(preset.defaultModules).toEqual(
      expect.arrayContaining(["eth", "net", "web3", "rpc", "txpool", "nodex"]),
    );
  });

  it("uses the reference node's genesis minimum gas prices", () => {
    expect(NETWORKS.mainnet.genesis.minimumGasPrice).toBe(183_000_000n);
    expect(NETWORKS.regtest.genesis.minimumGasPrice).toBe(0n);
  });

  it("names the networks", () => {
    expect(NETWORK_NAMES).toEqual(["mainnet", "testnet", "devnet", "regtest"]);
    expect(isNetworkName("regtest")).toBe(true);
    expect(isNetworkName("Regtest")).toBe(false);
    expect(networkByChainId(1)).toBeUndefined();
    expect(Object.isFrozen(NETWORKS.regtest)).toBe(true);
  });
});

describe("development accounts", () => {
  const accounts = deriveDevAccounts();

  it("are the ten mnemonic accounts, then the reference node's ten", () => {
    expect(DEV_MNEMONIC).toBe("test test test test test test test test test test test junk");
    expect(accounts).toHaveLength(20);
    expect(bytesToHex(accounts[0]!.address)).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
    expect(bytesToHex(accounts[0]!.privateKey)).toBe(
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    );
    expect(bytesToHex(accounts[1]!.address)).toBe("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
    expect(accounts[9]!.label).toBe("m/44'/60'/0'/0/9");
    expect(bytesToHex(accounts[10]!.address)).toBe("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826");
    expect(accounts[10]!.label).toBe("keccak256(cow)");
    expect(accounts[19]!.label).toBe("keccak256(cow9)");
  });

  it("derive each address from its key", () => {
    for (const account of accounts) {
      expect(privateKeyToAddress(account.privateKey)).toEqual(account.address);
    }
    expect(new Set(accounts.map((a) => bytesToHex(a.address))).size).toBe(20);
  });

  it("are computed once", () => {
    expect(deriveDevAccounts()).toBe(accounts);
  });
});
