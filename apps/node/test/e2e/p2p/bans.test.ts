import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { p2pAddress, rpc } from "../helpers/p2p.js";

// Bans by address outlive a restart: the list is in the datadir, and a node at a banned
// address cannot connect, while the operator can lift the ban.
const nodes: RunningNode[] = [];
const datadir = mkdtempSync(join(tmpdir(), "nodex-bans-"));
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(datadir, { recursive: true, force: true });
});

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
    expect(await rpc(a, "sco_banAddress", ["127.0.0.51"])).toBeNull();
    expect(await rpc(a, "sco_banAddress", ["10.0.0.0/8"])).toBeNull();
    const bad = await call(a.url, "sco_banAddress", ["10.0.0.1/40"]);
    expect(bad.error).toEqual({ code: -32602, message: "invalid banned address 10.0.0.1/40" });
    await a.stop();
    expect(JSON.parse(readFileSync(join(datadir, "p2p-bans.json"), "utf8"))).toMatchObject({
      manual: ["127.0.0.51", "10.0.0.0/8"],
    });

    a = await startNode({ network: "--devnet", datadir, args: args("127.0.0.50") });
    nodes.push(a);
    expect(await rpc(a, "sco_bannedAddresses")).toEqual(["127.0.0.51", "10.0.0.0/8"]);
    const b = await startNode({
      network: "--devnet",
      args: [...args("127.0.0.51"), "--bootnodes", p2pAddress(a)],
    });
    nodes.push(b);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await rpc(a, "net_peerCount")).toBe("0x0");
    expect(b.logs()).toContain("Bootnode dial failed");

    expect(await rpc(a, "sco_unbanAddress", ["127.0.0.51"])).toBeNull();
    const deadline = Date.now() + 15_000;
    while ((await rpc(a, "net_peerCount")) !== "0x1" && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(await rpc(a, "net_peerCount")).toBe("0x1");
    expect(await rpc(a, "sco_bannedAddresses")).toEqual(["10.0.0.0/8"]);
  }, 60_000);
});
