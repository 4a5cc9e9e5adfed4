import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, runCli, startNode } from "../helpers/node.js";

const tmp = mkdtempSync(join(tmpdir(), "nodex-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("usage", () => {
  it("--help lists every option with its environment variable", async () => {
    const { code, stdout } = await runCli(["--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "--network",
      "--regtest",
      "--datadir",
      "--rpc-host",
      "--rpc-port",
      "--config",
      "--log-level",
      "--api-key",
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain("NODEX_API_KEYS");
  });

  it("--version prints the version", async () => {
    const { code, stdout } = await runCli(["--version"]);
    expect(code).toBe(0);
    expect(stdout).toBe("nodex 0.1.0\n");
  });

  it.each([
    [["--no-such-flag"], "nodex: unknown option --no-such-flag (see nodex --help)\n"],
    [
      ["--rpc-port", "70000"],
      "nodex: invalid value for --rpc-port: 70000 is out of range for a port number (0-65535) (see nodex --help)\n",
    ],
    [
      ["--rpc-port=abc"],
      'nodex: invalid value for --rpc-port: "abc" is not a port number (0-65535) (see nodex --help)\n',
    ],
    [
      ["--network", "moon"],
      'nodex: invalid value for --network: "moon" is not one of mainnet, testnet, devnet, regtest (see nodex --help)\n',
    ],
    [
      ["--mainnet", "--regtest"],
      "nodex: conflicting network options: --mainnet and --regtest (see nodex --help)\n",
    ],
    [
      ["--log-level", "loud"],
      'nodex: invalid value for --log-level: "loud" is not one of error, warn, info, debug, trace (see nodex --help)\n',
    ],
    [["--rpc-port"], "nodex: option --rpc-port needs a value (PORT) (see nodex --help)\n"],
    [
      ["--api-key", "short"],
      "nodex: invalid value for --api-key: an API key is 8-128 characters of A-Z, a-z, 0-9, _ and - (see nodex --help)\n",
    ],
    [
      ["--rpc-modules", "eth,bogus"],
      'nodex: invalid value for --rpc-modules: "bogus" is not one of eth, net, web3, rpc, evm, debug, trace, txpool, personal, mnr, nodex, sco, hardhat, anvil (see nodex --help)\n',
    ],
    [["stray"], 'nodex: unexpected argument "stray" (see nodex --help)\n'],
  ])("%j exits 2 with one line naming the problem", async (args, message) => {
    const { code, stderr, stdout } = await runCli(args);
    expect(code).toBe(2);
    expect(stderr).toBe(message);
    expect(stdout).toBe("");
  });

  it("names a bad environment variable", async () => {
    const { code, stderr } = await runCli(["--regtest"], { NODEX_RPC_PORT: "port" });
    expect(code).toBe(2);
    expect(stderr).toBe(
      'nodex: invalid value for NODEX_RPC_PORT: "port" is not a port number (0-65535) (see nodex --help)\n',
    );
  });

  it("names a bad config file setting", async () => {
    const file = join(tmp, "bad.json");
    writeFileSync(file, JSON.stringify({ rpcPort: 1, colour: "blue" }));
    const { code, stderr } = await runCli(["--config", file]);
    expect(code).toBe(2);
    expect(stderr).toBe(`nodex: unknown setting colour in ${file} (see nodex --help)\n`);
  });

  it("rejects a config file that is not JSON", async () => {
    const file = join(tmp, "broken.json");
    writeFileSync(file, "{ rpcPort: ");
    const { code, stderr } = await runCli(["--config", file]);
    expect(code).toBe(2);
    expect(stderr).toMatch(new RegExp(`^nodex: cannot read config file ${file}: `));
  });
});

describe("settings precedence: flag > env > file > preset", () => {
  it("takes the network from the file, overridden by env, overridden by a flag", async () => {
    const file = join(tmp, "net.json");
    writeFileSync(file, JSON.stringify({ network: "testnet", rpcMaxBatchSize: 2 }));
    const fromFile = await startNode({ network: null, args: ["--config", file] });
    const fromEnv = await startNode({
      network: null,
      args: ["--config", file],
      env: { NODEX_NETWORK: "devnet" },
    });
    const fromFlag = await startNode({
      network: "--mainnet",
      args: ["--config", file],
      env: { NODEX_NETWORK: "devnet" },
    });
    try {
      expect((await call(fromFile.url, "eth_chainId")).result).toBe("0x1f");
      expect((await call(fromEnv.url, "eth_chainId")).result).toBe("0x20");
      expect((await call(fromFlag.url, "eth_chainId")).result).toBe("0x1e");
      // the file's other settings still apply
      const batch = await fetch(fromFlag.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(
          [1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "eth_chainId", params: [] })),
        ),
      });
      expect(((await batch.json()) as { error: { message: string } }).error.message).toBe(
        "invalid request: batch of 3 requests exceeds the limit of 2",
      );
    } finally {
      await Promise.all([fromFile.stop(), fromEnv.stop(), fromFlag.stop()]);
    }
  });
});

describe("lifecycle", () => {
  it("shuts down cleanly on SIGTERM and on SIGINT", async () => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const node = await startNode();
      const exited = new Promise<number | null>((resolve) => node.process.once("exit", resolve));
      node.process.kill(signal);
      expect(await exited).toBe(0);
      expect(node.logs()).toContain('"msg":"Stopped"');
      await node.stop();
    }
  });

  it("exits 1 with a clear message when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, stderr } = await runCli([
        "--regtest",
        "--datadir",
        join(tmp, "busy"),
        "--rpc-port",
        String(port),
        "--log-format",
        "json",
      ]);
      expect(code).toBe(1);
      expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: address already in use`);
    } finally {
      blocker.close();
    }
  });

  it("writes structured JSON log lines", async () => {
    const node = await startNode({ args: ["--log-level", "debug"] });
    await call(node.url, "eth_chainId", [], 42);
    await node.stop();
    const lines = node.logs().trim().split("\n");
    for (const line of lines) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      expect(entry).toHaveProperty("time");
      expect(entry).toHaveProperty("level");
      expect(entry).toHaveProperty("msg");
    }
    expect(lines.some((l) => l.includes('"msg":"Starting nodex"'))).toBe(true);
    const calls = lines.map((l) => JSON.parse(l)).filter((e) => e.msg === "RPC call");
    expect(calls).toEqual([
      expect.objectContaining({ level: "debug", module: "rpc", method: "eth_chainId", id: 42 }),
    ]);
  });
});
