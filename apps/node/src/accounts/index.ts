import { join } from "node:path";
import { deriveDevAccounts, type Logger } from "@nodex/types";
import type { NodeConfig } from "../config.js";
import { Keystore } from "./keystore.js";
import { Wallet } from "./wallet.js";

/** The node's wallet: the dev accounts on regtest and devnet, and `<datadir>/keystore`. */
export function openWallet(config: NodeConfig, logger: Logger): Promise<Wallet> {
  const keystore = new Keystore(
    { dir: join(config.datadir, "keystore"), kdf: config.keystoreKdf },
    { logger },
  );
  return Wallet.open({
    keystore,
    devAccounts: config.network.devAccounts ? deriveDevAccounts() : [],
    logger,
  });
}
