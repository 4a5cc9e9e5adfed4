export type { Command, Environment, LogFormat, NodeConfig } from "./config.js";
export { helpText, parseCommandLine, UsageError } from "./config.js";
export { createLogger, type LoggerOptions, type LogSink } from "./logger.js";
export { createNode, type NodexNode } from "./node.js";
export { COMMAND_FLAGS, OPTIONS, type OptionDef } from "./options.js";
export { clientVersion, NODEX_VERSION } from "./version.js";
