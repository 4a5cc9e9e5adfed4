import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { NodexError } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { MineCommandError, MineCommandErrorCode, runMiner } from "../../src/miner.js";

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A node on 127.0.0.1 that answers every call with the error given. */
async function failingNode(error: { code: number; message: string }): Promise<string> {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const { id } = JSON.parse(body) as { id: number };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ jsonrpc: "2.0", id, error }));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

describe("nodex mine", () => {
  it("stops with a coded error naming the method when the node refuses a call", async () => {
    const rpc = await failingNode({ code: -32601, message: "method not found" });
    const run = runMiner({
      rpc,
      threads: 0,
      maxBlocks: 1,
      pollMs: 10,
      log: () => undefined,
      signal: new AbortController().signal,
    });
    const err = await run.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MineCommandError);
    expect(err).toBeInstanceOf(NodexError);
    expect((err as MineCommandError).code).toBe(MineCommandErrorCode.RPC_ERROR);
    expect((err as MineCommandError).message).toBe("mnr_getWork: method not found (-32601)");
    expect((err as MineCommandError).meta).toEqual({ method: "mnr_getWork", rpcCode: -32601 });
  });
});
