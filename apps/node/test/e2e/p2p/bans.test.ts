import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Bans by address outlive a restart: the list is in the datadir, and a node at a banned
// address cannot connect, while the operator can lift the ban.
const nodes: RunningNode[] = [];
const datadir = mkdtempSync(join(tmpdir(), "nodex-bans-"));
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(datadir, { recursive: true, force: true });
});

async function ok(node: RunningNode, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result;
}

function p2pAddress(node: RunningNode): string {
  const line = node
    .logs()
    .split("\n")
    .find((l) => l.includes('"msg":"P2P listening"'))!;
  return (JSON.parse(line) as { addresses: string[] }).addresses[0]!;
}

const args = (host: string) => [
  "--p2p-host",
  host,
  "--p2p-port",
  "0",
  "--rpc-modules",
  "eth,net,web3,rpc,sco",
];

describe("bans by address", () => {
  it("survive a restart, keep a banned node out, and can be lifted", async () => {
    let a = await startNode({ network: "--devnet", datadir, args: args("127.0.0.50") });
    expect(await ok(a, "sco_banAddress", ["127.0.0.51"])).toBeNull();
    expect(await ok(a, "sco_banAddress", ["10.0.0.0/8"])).toBeNull();
    const bad = await call(a.url, "sco_banAddress", ["10.0.0.1/40"]);
    expect(bad.error).toEqual({ code: -32602, message: "invalid banned address 10.0.0.1/40" });
    await a.stop();
    expect(JSON.parse(readFileSync(join(datadir, "p2p-bans.json"), "utf8"))).toMatchObject({
      manual: ["127.0.0.51", "10.0.0.0/8"],
    });

    a = await startNode({ network: "--devnet", datadir, args: args("127.0.0.50") });
    nodes.push(a);
    expect(await ok(a, "sco_bannedAddresses")).toEqual(["127.0.0.51", "10.0.0.0/8"]);
    const b = await startNode({
      network: "--devnet",
      args: [...args("127.0.0.51"), "--bootnodes", p2pAddress(a)],
    });
    nodes.push(b);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await ok(a, "net_peerCount")).toBe("0x0");
    expect(b.logs()).toContain("Bootnode dial failed");

    expect(await ok(a, "sco_unbanAddress", ["127.0.0.51"])).toBeNull();
    const deadline = Date.now() + 15_000;
    while ((await ok(a, "net_peerCount")) !== "0x1" && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(await ok(a, "net_peerCount")).toBe("0x1");
    expect(await ok(a, "sco_bannedAddresses")).toEqual(["10.0.0.0/8"]);
  }, 60_000);
});
