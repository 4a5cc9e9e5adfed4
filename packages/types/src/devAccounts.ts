import { secp256k1 } from "@noble/curves/secp256k1.js";
import { HDKey } from "@scure/bip32";
import { mnemonicToSeedSync } from "@scure/bip39";
import type { Address } from "./data.js";
import { keccak256 } from "./keccak.js";

export const DEV_MNEMONIC = "test test test test test test test test test test test junk";

export interface DevAccount {
  readonly address: Address;
  readonly privateKey: Uint8Array;
  /** Where the key comes from: `m/44'/60'/0'/0/3` or `keccak256(cow3)`. */
  readonly label: string;
}

export function privateKeyToAddress(privateKey: Uint8Array): Address {
  const publicKey = secp256k1.getPublicKey(privateKey, false);
  return keccak256(publicKey.subarray(1)).slice(12) as Address;
}

let cached: readonly DevAccount[] | undefined;

/**
 * The development accounts of regtest and devnet: the ten of `DEV_MNEMONIC` (m/44'/60'/0'/0/i,
 * as Hardhat and Anvil), then the reference node's ten (keys keccak256("cow"), ("cow1") … ("cow9")).
 */
export function deriveDevAccounts(): readonly DevAccount[] {
  if (cached !== undefined) return cached;
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(DEV_MNEMONIC));
  const accounts: DevAccount[] = [];
  for (let i = 0; i < 10; i++) {
    const label = `m/44'/60'/0'/0/${i}`;
    const privateKey = root.derive(label).privateKey!;
    accounts.push(Object.freeze({ address: privateKeyToAddress(privateKey), privateKey, label }));
  }
  for (let i = 0; i < 10; i++) {
    const seed = i === 0 ? "cow" : `cow${i}`;
    const privateKey = keccak256(new TextEncoder().encode(seed));
    accounts.push(
      Object.freeze({
        address: privateKeyToAddress(privateKey),
        privateKey,
        label: `keccak256(${seed})`,
      }),
    );
  }
  cached = Object.freeze(accounts);
  return cached;
}
