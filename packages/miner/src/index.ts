export { MinerError, MinerErrorCode } from "./errors.js";
export {
  type MergedMiningWork,
  MinerServer,
  type MinerServerOptions,
  type SubmittedBlock,
} from "./minerServer.js";
export {
  BlockProducer,
  type BlockProducerOptions,
  MAX_BLOCKS_AT_ONCE,
  type StateEdit,
} from "./producer.js";
