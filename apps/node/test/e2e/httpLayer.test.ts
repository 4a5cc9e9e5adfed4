import { describe, expect, it } from "vitest";
import { call, runCli, startNode } from "./helpers/node.js";

// Which HTTP layer serves: Node's own, whichever value --rpc-http-layer is given; `auto` stays
// accepted for the configurations that name it, `uws` (uWebSockets.js, removed) is refused.
describe(`the HTTP layer on Node ${process.version}`, () => {
  it.each(["auto", "node"])("--rpc-http-layer %s serves with node", async (layer) => {
    const node = await startNode({ args: ["--rpc-http-layer", layer] });
    try {
      expect(node.logs()).toContain('"http":"node"');
      expect(node.logs()).not.toContain('"level":"warn"');
      expect((await call(node.url, "eth_chainId")).result).toBe("0x21");
    } finally {
      await node.stop();
    }
  });

  it("the default is node", async () => {
    const node = await startNode();
    try {
      expect(node.logs()).toContain('"http":"node"');
    } finally {
      await node.stop();
    }
  });

  it("--rpc-http-layer uws is a usage error naming the values accepted", async () => {
    const { code, stderr } = await runCli(["--regtest", "--rpc-http-layer", "uws"]);
    expect(code).toBe(2);
    expect(stderr).toContain("--rpc-http-layer");
    expect(stderr).toContain("auto");
    expect(stderr).toContain("node");
  });
});
