import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningNode, runCli, send, startNode } from "../helpers/node.js";
import { rpc, until } from "../helpers/p2p.js";

// Start-up errors that say what is wrong, and SIGHUP: never the end of the node, a reload of
// what can change while it runs (API keys and log level from the config file, the ban list).

const nodes: RunningNode[] = [];
const dirs: string[] = [];
const mounts: string[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
  for (const dir of mounts.splice(0)) spawnSync("umount", ["-l", dir]);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-startup-"));
  dirs.push(dir);
  return dir;
}

async function start(opts: Parameters<typeof startNode>[0]): Promise<RunningNode> {
  const node = await startNode(opts);
  nodes.push(node);
  return node;
}

describe("start-up errors", () => {
  it("names a datadir in use by a running node", async () => {
    const datadir = tempDir();
    await start({ datadir });
    const second = await runCli(["--regtest", "--datadir", datadir, "--rpc-port", "0", "--no-p2p"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `"err":"cannot open the database in ${join(datadir, "db")}: in use by another process (a running node?)"`,
    );
  });

  // Root ignores file permissions: a read-only mount stands for them (CI runs as root).
  const root = process.getuid?.() === 0;
  it.skipIf(!root)("names a read-only datadir and the cause", async () => {
    const datadir = tempDir();
    const first = await start({ datadir });
    await first.stop();
    nodes.splice(0);
    mkdirSync(join(datadir, "db"), { recursive: true });
    expect(spawnSync("mount", ["--bind", datadir, datadir]).status).toBe(0);
    mounts.push(datadir);
    expect(spawnSync("mount", ["-o", "remount,ro,bind", datadir]).status).toBe(0);
    const res = await runCli(["--regtest", "--datadir", datadir, "--rpc-port", "0", "--no-p2p"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      new RegExp(
        `"err":"cannot open the database in ${join(datadir, "db")}: the file system is read-only \\(IO error: .*Read-only file system\\)"`,
      ),
    );
  });
});

describe("SIGHUP", () => {
  const KEY1 = "first-key-0001";
  const KEY2 = "second-key-0002";
  const req = { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] };

  it("reloads the API keys and the log level from the config file, and keeps serving", async () => {
    const dir = tempDir();
    const file = join(dir, "nodex.json");
    writeFileSync(file, JSON.stringify({ apiKeys: [KEY1], logLevel: "info" }));
    const node = await start({ args: ["--config", file] });
    expect((await send(node.url, req, { path: `/${KEY1}` })).status).toBe(200);
    const reloads = () =>
      node
        .logs()
        .split("\n")
        .filter((l) => l.includes("Reloaded on SIGHUP"));

    writeFileSync(file, JSON.stringify({ apiKeys: [KEY2], logLevel: "warn" }));
    node.process.kill("SIGHUP");
    await until("the reload", async () => (reloads().length === 1 ? true : undefined));
    expect(JSON.parse(reloads()[0]!)).toMatchObject({ logLevel: "warn", apiKeys: 1 });
    expect((await send(node.url, req, { path: `/${KEY1}` })).status).toBe(401);
    expect((await send(node.url, req, { path: `/${KEY2}` })).status).toBe(200);
    expect(node.process.exitCode).toBeNull();

    // Invalid settings change nothing.
    writeFileSync(file, JSON.stringify({ apiKeys: ["short"], logLevel: "info" }));
    node.process.kill("SIGHUP");
    await until("the refusal", async () =>
      node.logs().includes("Reload refused: the settings are not valid") ? true : undefined,
    );
    expect((await send(node.url, req, { path: `/${KEY2}` })).status).toBe(200);

    // No keys would make a hosted node local: that needs a restart.
    writeFileSync(file, JSON.stringify({ logLevel: "info" }));
    node.process.kill("SIGHUP");
    await until("the failure", async () =>
      node.logs().includes("switching between local and hosted mode needs a restart")
        ? true
        : undefined,
    );
    expect((await send(node.url, req, { path: `/${KEY2}` })).status).toBe(200);
    expect((await send(node.url, req, { path: "/" })).status).toBe(401);
    expect(node.process.exitCode).toBeNull();
    // It still stops cleanly, as ever.
    expect(await node.stop()).toBe(0);
  });

  it("sets the log level: what is below it is no longer written", async () => {
    const dir = tempDir();
    const file = join(dir, "nodex.json");
    writeFileSync(file, JSON.stringify({ logLevel: "info" }));
    const node = await start({ args: ["--config", file] });
    const mined = () =>
      node
        .logs()
        .split("\n")
        .filter((l) => l.includes('"msg":"Mined block"'));
    await rpc(node, "evm_mine");
    expect(mined()).toHaveLength(1);
    writeFileSync(file, JSON.stringify({ logLevel: "warn" }));
    node.process.kill("SIGHUP");
    await until("the reload", async () =>
      node.logs().includes("Reloaded on SIGHUP") ? true : undefined,
    );
    await rpc(node, "evm_mine");
    expect(await rpc(node, "eth_blockNumber")).toBe("0x2");
    expect(mined()).toHaveLength(1);
  });

  it("reads the ban list again", async () => {
    const node = await start({
      network: "--devnet",
      args: ["--p2p-host", "127.0.0.60", "--p2p-port", "0", "--rpc-modules", "eth,net,rpc,sco"],
    });
    expect(await rpc(node, "sco_bannedAddresses")).toEqual([]);
    writeFileSync(
      join(node.datadir, "p2p-bans.json"),
      JSON.stringify({ manual: ["127.0.0.99", "10.1.0.0/16"], punished: [] }),
    );
    node.process.kill("SIGHUP");
    await until("the reload", async () =>
      node.logs().includes("Reloaded on SIGHUP") ? true : undefined,
    );
    expect(await rpc(node, "sco_bannedAddresses")).toEqual(["127.0.0.99", "10.1.0.0/16"]);
  });
});
