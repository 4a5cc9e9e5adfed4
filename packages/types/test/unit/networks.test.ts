import { describe, expect, it } from "vitest";
import {
  isNetworkName,
  MODULE_NAMES,
  type ModuleName,
  NETWORK_NAMES,
  NETWORKS,
  networkByChainId,
} from "../../src/index.js";

const PUBLIC: ModuleName[] = ["eth", "net", "web3", "rpc", "txpool", "nodex"];
const DEV: ModuleName[] = [...PUBLIC, "evm", "personal", "mnr", "hardhat", "anvil"];

describe("network presets", () => {
  it.each([
    ["mainnet", 30, "Mainnet", false, PUBLIC, [183_000_000n, 6_800_000n, 1_048_576n]],
    ["testnet", 31, "Testnet", false, PUBLIC, [0n, 5_000_000n, 1_048_576n]],
    ["devnet", 32, "Devnet", true, DEV, [0n, 10_000_000n, 1n]],
    ["regtest", 33, "Regtest", true, DEV, [0n, 10_000_000n, 1n]],
  ] as const)("%s has chain id %i", (name, chainId, displayName, dev, modules, genesis) => {
    const preset = NETWORKS[name];
    expect(preset.name).toBe(name);
    expect(preset.chainId).toBe(chainId);
    expect(preset.displayName).toBe(displayName);
    expect(preset.devAccounts).toBe(dev);
    expect([...preset.defaultModules].sort()).toEqual([...modules].sort());
    expect(preset.genesis).toEqual({
      minimumGasPrice: genesis[0],
      gasLimit: genesis[1],
      difficulty: genesis[2],
    });
    expect(networkByChainId(chainId)).toBe(preset);
  });

  it.each([
    ["mainnet", 12n, 4000n],
    ["testnet", 12n, 50n],
    ["devnet", 0n, 10n],
    ["regtest", 0n, 0n],
  ] as const)("%s names blocks %i and %i below the head safe and finalized", (name, safe, fin) => {
    expect(NETWORKS[name].safeDepth).toBe(safe);
    expect(NETWORKS[name].finalizedDepth).toBe(fin);
  });

  it("never puts finalized above safe, and only the on-demand chain makes both the head", () => {
    for (const name of NETWORK_NAMES) {
      const { safeDepth, finalizedDepth } = NETWORKS[name];
      expect(safeDepth >= 0n).toBe(true);
      expect(finalizedDepth >= safeDepth).toBe(true);
    }
    const atHead = NETWORK_NAMES.filter((n) => NETWORKS[n].finalizedDepth === 0n);
    expect(atHead).toEqual(["regtest"]);
  });

  it("has one preset per name, with distinct chain ids", () => {
    expect(Object.keys(NETWORKS).sort()).toEqual([...NETWORK_NAMES].sort());
    expect(new Set(NETWORK_NAMES.map((n) => NETWORKS[n].chainId)).size).toBe(NETWORK_NAMES.length);
  });

  it("only enables known modules", () => {
    for (const name of NETWORK_NAMES) {
      for (const module of NETWORKS[name].defaultModules) expect(MODULE_NAMES).toContain(module);
    }
  });

  it("cannot be changed by a caller", () => {
    expect(Object.isFrozen(NETWORKS)).toBe(true);
    for (const name of NETWORK_NAMES) {
      expect(Object.isFrozen(NETWORKS[name])).toBe(true);
      expect(Object.isFrozen(NETWORKS[name].genesis)).toBe(true);
      expect(Object.isFrozen(NETWORKS[name].defaultModules)).toBe(true);
    }
    expect(Object.isFrozen(NETWORK_NAMES)).toBe(true);
    expect(Object.isFrozen(MODULE_NAMES)).toBe(true);
  });
});

describe("names and lookups", () => {
  it("lists the networks and modules", () => {
    expect(NETWORK_NAMES).toEqual(["mainnet", "testnet", "devnet", "regtest"]);
    expect([...MODULE_NAMES].sort()).toEqual(
      [
        "eth",
        "net",
        "web3",
        "rpc",
        "evm",
        "debug",
        "trace",
        "txpool",
        "personal",
        "mnr",
        "nodex",
        "sco",
        "hardhat",
        "anvil",
      ].sort(),
    );
  });

  it.each([
    ["regtest", true],
    ["mainnet", true],
    ["Regtest", false],
    ["", false],
    ["toString", false],
    [33, false],
    [null, false],
  ])("isNetworkName(%j) is %s", (value, expected) => {
    expect(isNetworkName(value)).toBe(expected);
  });

  it.each([1, 0, 29, 34, -30, 30.5])("networkByChainId(%d) finds nothing", (chainId) => {
    expect(networkByChainId(chainId)).toBeUndefined();
  });
});
