import { EMPTY_TRIE_ROOT, type WorldState } from "@nodex/state";
import {
  type Address,
  type BlockHeader,
  deriveDevAccounts,
  type NetworkPreset,
  unclesHash,
} from "@nodex/types";

/** What each development account holds at genesis on regtest and devnet: 10,000 units. */
export const DEV_ACCOUNT_BALANCE = 10_000n * 10n ** 18n;

/** The genesis coinbase of every network, as the reference node's. */
const GENESIS_COINBASE = new Uint8Array(20).fill(0x33) as Address;

const EXTRA_DATA: Readonly<Record<string, string>> = {
  mainnet: "Happy Bitcoin Day! 03/Jan/2018 - RSK technology at the service of society",
  testnet: "CM'(A",
  devnet: "horse",
  regtest: "horse",
};

/** Funds the genesis accounts of `network` in `state`. */
export async function writeGenesisState(state: WorldState, network: NetworkPreset): Promise<void> {
  if (!network.devAccounts) return;
  for (const account of deriveDevAccounts())
    await state.setBalance(account.address, DEV_ACCOUNT_BALANCE);
}

/** The genesis header of `network` with the given state root. */
export function genesisHeader(network: NetworkPreset, stateRoot: Uint8Array): BlockHeader {
  const extra = new TextEncoder().encode(EXTRA_DATA[network.name] ?? "").slice(0, 32);
  return {
    parentHash: new Uint8Array(32),
    unclesHash: unclesHash([]),
    coinbase: GENESIS_COINBASE,
    stateRoot,
    transactionsRoot: EMPTY_TRIE_ROOT,
    receiptsRoot: EMPTY_TRIE_ROOT,
    logsBloom: new Uint8Array(256),
    difficulty: network.genesis.difficulty,
    number: 0n,
    gasLimit: network.genesis.gasLimit,
    gasUsed: 0n,
    timestamp: network.name === "mainnet" ? 0x5a4af5b0n : 0n,
    extraData: extra,
    paidFees: 0n,
    minimumGasPrice: network.genesis.minimumGasPrice,
    uncleCount: 0,
    ummRoot: new Uint8Array(),
    bitcoinMergedMiningHeader: new Uint8Array(),
    bitcoinMergedMiningMerkleProof: new Uint8Array(),
    bitcoinMergedMiningCoinbaseTransaction: new Uint8Array(),
  };
}
