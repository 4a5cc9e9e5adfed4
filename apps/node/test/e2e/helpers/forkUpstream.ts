import { ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import { call, type RunningNode, startNode } from "./node.js";
import { compile } from "./solidity.js";

/** The first development account (funded on devnet and on every fork). */
export const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/** A Nodex devnet a fork is made of, with state no development account holds. */
export interface UpstreamChain {
  readonly node: RunningNode;
  /** A token contract (storage slots 0-3: name, symbol, decimals, total supply). */
  readonly token: string;
  /** Accounts funded by the upstream only, `1000 + i` wei each. */
  readonly accounts: readonly string[];
  /** The upstream's head once all of it is mined: the block forks go on from. */
  readonly forkBlock: number;
}

/** A JSON-RPC call's result; throws with the error when it has one. */
export async function ok(url: string, method: string, params: unknown[] = []) {
  const res = await call(url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result;
}

export const hex = (n: number | bigint) => `0x${n.toString(16)}`;

/**
 * Starts a devnet holding a token and `accounts` funded accounts, all sent at once with
 * consecutive nonces so that few blocks are mined.
 */
export async function startUpstreamChain(accounts = 8): Promise<UpstreamChain> {
  const node = await startNode({ network: "--devnet" });
  const provider = new JsonRpcProvider(node.url, 32, { staticNetwork: true, cacheTimeout: -1 });
  provider.pollingInterval = 50;
  try {
    const owner = new Wallet(KEY0, provider);
    const { Token } = compile("Token.sol");
    const nonce = await provider.getTransactionCount(owner.address, "pending");
    const deploy = await new ContractFactory(
      Token!.abi,
      Token!.bytecode,
      owner,
    ).getDeployTransaction(1_000_000n);
    const addresses = Array.from(
      { length: accounts },
      (_, i) => `0x${(0xa11ce0000n + BigInt(i)).toString(16).padStart(40, "0")}`,
    );
    const sent = [await owner.sendTransaction({ ...deploy, nonce })];
    for (const [i, to] of addresses.entries())
      sent.push(
        await owner.sendTransaction({ to, value: 1000n + BigInt(i), nonce: nonce + 1 + i }),
      );
    const receipts = await Promise.all(sent.map((tx) => tx.wait()));
    const token = receipts[0]!.contractAddress!;
    const forkBlock = Number(await ok(node.url, "eth_blockNumber"));
    return { node, token, accounts: addresses, forkBlock };
  } finally {
    provider.destroy();
  }
}
