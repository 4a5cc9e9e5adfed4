import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Every method of the walking skeleton, with its exact result, on each network.
const nodes: Record<string, RunningNode> = {};
beforeAll(async () => {
  const started = await Promise.all(
    ["--regtest", "--devnet", "--testnet", "--mainnet"].map((network) => startNode({ network })),
  );
  [nodes.regtest, nodes.devnet, nodes.testnet, nodes.mainnet] = started;
});
afterAll(async () => {
  await Promise.all(Object.values(nodes).map((n) => n.stop()));
});

const result = async (network: string, method: string, params: unknown[] = []) => {
  const res = await call(nodes[network]!.url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
};

describe("web3_", () => {
  it("web3_clientVersion names the node, its version, platform and runtime", async () => {
    const version = await result("regtest", "web3_clientVersion");
    expect(version).toBe(
      `Nodex/v0.1.0/${process.platform}-${process.arch}/node${process.versions.node}`,
    );
  });

  it.each([
    [
      "0x68656c6c6f20776f726c64",
      "0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad",
    ],
    ["0x", "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"],
    ["0xABCDEF", "0x800d501693feda2226878e1ec7869eef8919dbc5bd10c2bcd031b94d73492860"],
  ])("web3_sha3(%s) is Keccak-256", async (input, hash) => {
    expect(await result("regtest", "web3_sha3", [input])).toBe(hash);
  });

  it("web3_sha3 rejects input without the 0x prefix", async () => {
    const res = await call(nodes.regtest!.url, "web3_sha3", ["abcd"]);
    expect(res.error).toEqual({
      code: -32602,
      message: "invalid argument 0: hex string without 0x prefix",
    });
  });
});

describe.each([
  ["mainnet", "30", "0x1e", "0xbff9820"],
  ["testnet", "31", "0x1f", "0x0"],
  ["devnet", "32", "0x20", "0x0"],
  ["regtest", "33", "0x21", "0x0"],
])("on %s", (network, netVersion, chainId, gasPrice) => {
  it("net_version is the chain id in decimal", async () => {
    expect(await result(network, "net_version")).toBe(netVersion);
  });
  it("eth_chainId is the EIP-155 chain id", async () => {
    expect(await result(network, "eth_chainId")).toBe(chainId);
  });
  it("eth_gasPrice is the best block's minimum gas price plus 10%", async () => {
    expect(await result(network, "eth_gasPrice")).toBe(gasPrice);
  });
  it("eth_blockNumber is genesis", async () => {
    expect(await result(network, "eth_blockNumber")).toBe("0x0");
  });
});

describe("net_ and node status", () => {
  it.each([
    ["net_listening", false],
    ["net_peerCount", "0x0"],
    ["net_peerList", []],
    ["eth_protocolVersion", "0x3e"],
    ["nodex_protocolVersion", "0x3e"],
    ["eth_syncing", false],
    ["eth_mining", true],
    ["eth_hashrate", "0x0"],
  ])("%s answers %j", async (method, expected) => {
    expect(await result("regtest", method)).toEqual(expected);
  });
});

describe("accounts and coinbase", () => {
  it("eth_accounts lists the development accounts on regtest: the mnemonic ones, then the reference's", async () => {
    const accounts = (await result("regtest", "eth_accounts")) as string[];
    expect(accounts).toHaveLength(20);
    expect(accounts[0]).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
    expect(accounts[1]).toBe("0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
    expect(accounts[9]).toBe("0xa0ee7a142d267c1f36714e4a8f75612f20a79720");
    expect(accounts[10]).toBe("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826");
    expect(new Set(accounts).size).toBe(20);
  });

  it("eth_accounts is empty on mainnet", async () => {
    expect(await result("mainnet", "eth_accounts")).toEqual([]);
  });

  it("eth_coinbase is the first development account on regtest and the zero address on mainnet", async () => {
    expect(await result("regtest", "eth_coinbase")).toBe(
      "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
    );
    expect(await result("mainnet", "eth_coinbase")).toBe(
      "0x0000000000000000000000000000000000000000",
    );
  });

  it("eth_coinbase follows --coinbase", async () => {
    const node = await startNode({
      args: ["--coinbase", "0x00000000000000000000000000000000000000AB"],
    });
    try {
      expect((await call(node.url, "eth_coinbase")).result).toBe(
        "0x00000000000000000000000000000000000000ab",
      );
    } finally {
      await node.stop();
    }
  });
});

describe("modules", () => {
  it("rpc_modules lists the served modules", async () => {
    expect(await result("mainnet", "rpc_modules")).toEqual({
      web3: "1.0",
      net: "1.0",
      eth: "1.0",
      nodex: "1.0",
      txpool: "1.0",
      rpc: "1.0",
    });
  });

  it("a module left out of --rpc-modules answers -32601 saying so", async () => {
    const node = await startNode({ args: ["--rpc-modules", "eth,net"] });
    try {
      const res = await call(node.url, "web3_clientVersion");
      expect(res.error).toEqual({
        code: -32601,
        message:
          "the method web3_clientVersion is not available: the web3 module is not enabled on this node",
      });
      expect((await call(node.url, "eth_chainId")).result).toBe("0x21");
    } finally {
      await node.stop();
    }
  });
});
