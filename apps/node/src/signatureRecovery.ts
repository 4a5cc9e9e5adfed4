import {
  keccakBackend,
  type Logger,
  precomputeSecp256k1,
  selectSignatureRecovery,
} from "@nodex/types";
import type { NodeConfig } from "./config.js";

/**
 * Chooses the backend of every signature recovery (transaction senders, ECRECOVER) before the
 * first one, and logs which it is: `libsecp256k1`, or `noble` with the reason; logs which
 * Keccak-256 runs (`wasm`, or `noble` where WebAssembly does not instantiate).
 */
export function startSignatureRecovery(config: NodeConfig, logger: Logger): void {
  // This thread signs (the node's accounts) and may recover with noble: the generator's
  // multiples are ready before the first request.
  precomputeSecp256k1();
  const info = selectSignatureRecovery(config.signatureRecovery);
  logger.info("Signature recovery", { ...info });
  logger.info("Keccak-256", { backend: keccakBackend });
}
