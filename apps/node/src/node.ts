import { mkdir } from "node:fs/promises";
import { createRPCServer, type RPCServer } from "@nodex/rpc";
import type { Logger } from "@nodex/types";
import type { NodeConfig } from "./config.js";
import { createServices } from "./services.js";
import { NODEX_VERSION } from "./version.js";

export interface NodexNode {
  readonly config: NodeConfig;
  readonly rpc: RPCServer;
  start(): Promise<void>;
  /** Stops intake first, then closes storage. Safe to call twice. */
  stop(): Promise<void>;
}

/** Wires the packages of one node from its config. */
export function createNode(config: NodeConfig, logger: Logger): NodexNode {
  const services = createServices(config);
  const rpc = createRPCServer(config.rpc, { services, logger: logger.child({ module: "rpc" }) });
  let stopping: Promise<void> | undefined;
  return {
    config,
    rpc,
    async start() {
      logger.info("Starting nodex", {
        version: NODEX_VERSION,
        network: config.network.name,
        chainId: config.network.chainId,
        datadir: config.datadir,
      });
      await mkdir(config.datadir, { recursive: true });
      await rpc.start();
    },
    stop() {
      stopping ??= (async () => {
        logger.info("Shutting down");
        await rpc.stop();
        logger.info("Stopped");
      })();
      return stopping;
    },
  };
}
