export {
  ChainFileError,
  exportChain,
  type FileItem,
  type ImportSummary,
  importChain,
  MAX_BLOCK_BYTES,
  rlpItems,
} from "./chainFile.js";
export type {
  Command,
  Environment,
  ExportCommand,
  ImportCommand,
  LogFormat,
  NodeConfig,
} from "./config.js";
export { helpText, parseCommandLine, UsageError } from "./config.js";
export { createLogger, type LoggerOptions, type LogSink } from "./logger.js";
export { createNode, type NodeStartOptions, type NodexNode } from "./node.js";
export {
  COMMAND_FLAGS,
  COMMANDS,
  type CommandDef,
  type CommandOptionDef,
  OPTIONS,
  type OptionDef,
} from "./options.js";
export { clientVersion, NODEX_VERSION } from "./version.js";
