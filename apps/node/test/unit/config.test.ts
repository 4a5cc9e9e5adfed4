import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type NodeConfig, parseCommandLine, UsageError } from "../../src/index.js";

const tmp = mkdtempSync(join(tmpdir(), "nodex-config-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function config(argv: string[], env: Record<string, string> = {}): NodeConfig {
  const command = parseCommandLine({ argv, env, isTTY: false, home: "/home/op", cwd: "/srv" });
  if (command.kind !== "run") throw new Error(`expected a run command, got ${command.kind}`);
  return command.config;
}

describe("parseCommandLine", () => {
  it("defaults to mainnet with its preset", () => {
    const c = config([]);
    expect(c.network.name).toBe("mainnet");
    expect(c.datadir).toBe("/home/op/.nodex/mainnet");
    expect(c.rpc.host).toBe("127.0.0.1");
    expect(c.rpc.port).toBe(4444);
    expect(c.rpc.modules).toEqual(["eth", "net", "web3", "rpc", "txpool", "nodex"]);
    expect(c.rpc.corsOrigins).toEqual([]);
    expect(c.logFormat).toBe("json");
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.rpc)).toBe(true);
  });

  it("reads the sync mode: full by default, snap when asked, refused where it cannot work", () => {
    expect(config(["--devnet"]).p2p?.syncMode).toBe("full");
    expect(config(["--testnet", "--sync-mode", "snap"]).p2p?.syncMode).toBe("snap");
    expect(config(["--devnet"], { NODEX_SYNC_MODE: "snap" }).p2p?.syncMode).toBe("snap");
    expect(() => config(["--devnet", "--sync-mode", "fast"])).toThrow(
      /invalid value for --sync-mode: "fast" is not one of full, snap/,
    );
    expect(() => config(["--regtest", "--sync-mode", "snap"])).toThrow(
      new UsageError(
        "--sync-mode snap needs the peer-to-peer network: it downloads from peers (p2p is off)",
      ),
    );
    expect(() => config(["--devnet", "--sync-mode", "snap", "--archive"])).toThrow(
      /--sync-mode snap and --state-window all contradict each other/,
    );
  });

  it("reads the operations settings: metrics listener, readiness checks, access log", () => {
    const off = config(["--regtest"]);
    expect(off.metricsAddr).toBeUndefined();
    expect(off.accessLog).toBeUndefined();
    expect(off.rpc.ready).toEqual({ minPeers: 0, maxBlocksBehind: 10, maxHeadAgeSeconds: 0 });
    const c = config(
      ["--metrics-addr", "[::1]:9464", "--ready-min-peers", "2", "--rpc-access-log", "logs/a.log"],
      { NODEX_READY_MAX_BLOCKS_BEHIND: "3", NODEX_READY_MAX_HEAD_AGE: "300" },
    );
    expect(c.metricsAddr).toEqual({ host: "::1", port: 9464 });
    expect(c.accessLog).toBe("/srv/logs/a.log");
    expect(c.rpc.ready).toEqual({ minPeers: 2, maxBlocksBehind: 3, maxHeadAgeSeconds: 300 });
    expect(config(["--rpc-access-log", "-"]).accessLog).toBe("-");
    for (const bad of ["9464", "localhost", "127.0.0.1:", "127.0.0.1:65536", "[nope]:1", "a b:1"]) {
      expect(() => config(["--metrics-addr", bad])).toThrow(UsageError);
    }
  });

  it("applies the regtest preset", () => {
    const c = config(["--regtest"]);
    expect(c.network.chainId).toBe(33);
    expect(c.datadir).toBe("/home/op/.nodex/regtest");
    expect(c.rpc.modules).toEqual(expect.arrayContaining(["evm", "personal", "mnr"]));
    expect(c.rpc.corsOrigins).toEqual(["*"]);
  });

  it("accepts --flag value and --flag=value, and resolves paths", () => {
    const c = config(["--network=devnet", "--datadir", "data", "--rpc-port=0"]);
    expect(c.network.name).toBe("devnet");
    expect(c.datadir).toBe("/srv/data");
    expect(c.rpc.port).toBe(0);
    expect(config(["--datadir", "~/x"]).datadir).toBe("/home/op/x");
  });

  it("collects repeated and comma-separated list values without duplicates", () => {
    const c = config([
      "--api-key",
      "aaaaaaaa,bbbbbbbb",
      "--api-key",
      "cccccccc",
      "--api-key",
      "aaaaaaaa",
    ]);
    expect(c.rpc.apiKeys).toEqual(["aaaaaaaa", "bbbbbbbb", "cccccccc"]);
  });

  it("lets a flag beat the environment, and the environment beat the file", () => {
    const file = join(tmp, "c.json");
    writeFileSync(
      file,
      JSON.stringify({
        rpcPort: 1111,
        rpcHost: "0.0.0.0",
        logLevel: "debug",
        apiKeys: ["filekey1"],
      }),
    );
    const c = config(["--config", file, "--rpc-port", "3333"], {
      NODEX_RPC_PORT: "2222",
      NODEX_RPC_HOST: "::1",
    });
    expect(c.rpc.port).toBe(3333);
    expect(c.rpc.host).toBe("::1");
    expect(c.logLevel).toBe("debug");
    expect(c.rpc.apiKeys).toEqual(["filekey1"]);
    expect(c.sources).toEqual({
      rpcPort: "flag",
      rpcHost: "env",
      logLevel: "file",
      apiKeys: "file",
    });
  });

  it("reads the config file named by NODEX_CONFIG", () => {
    const file = join(tmp, "env.json");
    writeFileSync(file, JSON.stringify({ network: "testnet" }));
    expect(config([], { NODEX_CONFIG: file }).network.name).toBe("testnet");
  });

  it("takes a Redis URL from --redis or NODEX_REDIS; none by default", () => {
    expect(config([]).redis).toBeUndefined();
    expect(config(["--redis", "rediss://user:pw@cache.internal:6380/2"]).redis).toBe(
      "rediss://user:pw@cache.internal:6380/2",
    );
    expect(config([], { NODEX_REDIS: "redis://127.0.0.1:6379" }).redis).toBe(
      "redis://127.0.0.1:6379",
    );
  });

  it("ignores empty environment variables", () => {
    expect(config([], { NODEX_RPC_PORT: "" }).rpc.port).toBe(4444);
  });

  it.each([
    [["--rpc-port", "-1"], 'invalid value for --rpc-port: "-1" is not a port number (0-65535)'],
    [
      ["--coinbase", "0x12"],
      'invalid value for --coinbase: "0x12" is not a 20-byte 0x-prefixed hex address',
    ],
    [
      ["--rpc-cors", "example.com"],
      'invalid value for --rpc-cors: "example.com" is not an origin such as http://localhost:3000, or *',
    ],
    [
      ["--redis", "http://127.0.0.1:6379"],
      'invalid value for --redis: "http" is not a Redis scheme: use redis:// or rediss:// (TLS)',
    ],
    [
      ["--redis", "127.0.0.1:6379"],
      'invalid value for --redis: "127.0.0.1:6379" has no scheme: write redis://127.0.0.1:6379 (rediss:// for TLS)',
    ],
    [
      ["--redis", "redis://cache/zero"],
      'invalid value for --redis: the path "/zero" is not a database number such as /0',
    ],
    [
      ["--redis", "redis://cache:6379?tls=1"],
      'invalid value for --redis: "redis://cache:6379?tls=1" has a query or fragment, which the node does not read',
    ],
    [["--regtest=yes"], "option --regtest takes no value"],
    [
      ["--testnet", "--network", "regtest"],
      "conflicting network options: --testnet and --network regtest",
    ],
    [
      ["--rpc-max-batch-size", "0"],
      "invalid value for --rpc-max-batch-size: 0 is out of range for a batch size (1-100000)",
    ],
    [
      ["--state-window", "0"],
      "invalid value for --state-window: 0 is out of range for a number of blocks (1-100000000)",
    ],
    [
      ["--state-window", "some"],
      'invalid value for --state-window: "some" is not a number of blocks (1-100000000)',
    ],
    [["--archive=1"], "option --archive takes no value"],
    [
      ["--mine-interval", "1.5", "--regtest"],
      'invalid value for --mine-interval: "1.5" is not a number of seconds (0-86400)',
    ],
    [
      ["--testnet", "--mine-interval", "5"],
      "--mine-interval works on regtest and devnet only: blocks of testnet are made by merged mining",
    ],
    [
      ["--testnet", "--no-automine"],
      "--no-automine works on regtest and devnet only: testnet makes no blocks of its own anyway",
    ],
    [
      ["--devnet", "--no-automine", "--mine-interval", "2"],
      "--mine-interval and --no-automine contradict each other: pick one",
    ],
    [
      ["--regtest", "--automine", "maybe"],
      'invalid value for --automine: "maybe" is not one of on, off',
    ],
    [
      ["--testnet", "--fork-url", "http://127.0.0.1:8545"],
      "--fork-url works on regtest and devnet only: a node of testnet follows its own network",
    ],
    [
      ["--regtest", "--fork-block", "12"],
      "--fork-block needs --fork-url: it says how to fork a network",
    ],
    [
      ["--regtest", "--fork-url", "http://127.0.0.1:8545", "--p2p", "on"],
      "--fork-url and --p2p on contradict each other: the blocks of a fork go on from another network's, which no peer of this one has",
    ],
    [
      ["--regtest", "--fork-url", "http://127.0.0.1:8545", "--rpc-worker-threads", "2"],
      "--fork-url serves every request on the main thread, where the upstream is: leave --rpc-worker-threads at 0",
    ],
    [
      ["--regtest", "--fork-url", "ws://127.0.0.1:8546"],
      "invalid value for --fork-url: ws: is not a JSON-RPC transport here: use http:// or https://",
    ],
    [
      ["--regtest", "--fork-url", "127.0.0.1:8545"],
      "invalid value for --fork-url: not a URL (e.g. http://127.0.0.1:8545)",
    ],
    [
      ["--regtest", "--fork-url", "http://x", "--fork-block", "-3"],
      'invalid value for --fork-block: "-3" is not a block number (a decimal integer)',
    ],
    [
      ["--regtest", "--fork-url", "http://x", "--fork-block-hash", "0x12"],
      'invalid value for --fork-block-hash: "0x12" is not a block hash (0x and 64 hex digits)',
    ],
    [
      ["--regtest", "--fork-timeout", "5"],
      "--fork-timeout needs --fork-url: it says how to fork a network",
    ],
    [
      ["--regtest", "--fork-url", "http://x", "--fork-timeout", "0"],
      "invalid value for --fork-timeout: 0 is out of range for seconds (1-600)",
    ],
    [
      ["--regtest", "--fork-url", "http://x", "--fork-rps", "0"],
      "invalid value for --fork-rps: 0 is out of range for requests a second (1-100000)",
    ],
  ])("rejects %j", (argv, message) => {
    expect(() => config(argv)).toThrow(new UsageError(message));
  });

  it("reads the fork settings: upstreams in order, block, hash, checks and request budget", () => {
    expect(config(["--regtest"]).fork).toBeUndefined();
    const c = config(
      [
        "--devnet",
        "--fork-url",
        "https://user:secret@rpc.example/v2/KEY",
        "--fork-url",
        "http://127.0.0.2:8545",
        "--fork-block",
        "1200",
        "--fork-block-hash",
        `0x${"AB".repeat(32)}`,
      ],
      { NODEX_FORK_RPS: "25", NODEX_FORK_TIMEOUT: "3" },
    );
    expect(c.fork).toEqual({
      urls: ["https://user:secret@rpc.example/v2/KEY", "http://127.0.0.2:8545"],
      block: 1200n,
      blockHash: `0x${"ab".repeat(32)}`,
      verify: true,
      rps: 25,
      timeoutSeconds: 3,
    });
    const loose = config(["--regtest", "--fork-verify", "off"], {
      NODEX_FORK_URL: "http://127.0.0.1:8545",
    });
    expect(loose.fork).toEqual({
      urls: ["http://127.0.0.1:8545"],
      block: undefined,
      blockHash: undefined,
      verify: false,
      rps: undefined,
      timeoutSeconds: 10,
    });
  });

  it("keeps all state on regtest and a window of 128 blocks elsewhere, unless told", () => {
    expect(config(["--regtest"]).stateWindow).toBe("all");
    expect(config(["--devnet"]).stateWindow).toBe(128);
    expect(config([]).stateWindow).toBe(128);
    expect(config(["--archive"]).stateWindow).toBe("all");
    expect(config(["--regtest", "--state-window", "16"]).stateWindow).toBe(16);
    expect(config(["--testnet"], { NODEX_STATE_WINDOW: "all" }).stateWindow).toBe("all");
  });

  it("mines at once by default, or at an interval on development networks", () => {
    expect(config(["--regtest"]).mineInterval).toBe(0);
    expect(config(["--devnet", "--mine-interval", "3"]).mineInterval).toBe(3);
    expect(config(["--mainnet", "--mine-interval", "0"]).mineInterval).toBe(0);
    expect(config(["--regtest"]).automine).toBe(true);
    expect(config(["--regtest", "--no-automine"]).automine).toBe(false);
    expect(config(["--devnet"], { NODEX_AUTOMINE: "off" }).automine).toBe(false);
  });

  it("serves the mnr module with --miner, and not with --miner-work off", () => {
    expect(config(["--testnet"]).rpc.modules).not.toContain("mnr");
    expect(config(["--testnet", "--miner"]).rpc.modules).toContain("mnr");
    expect(config(["--regtest", "--miner-work", "off"]).rpc.modules).not.toContain("mnr");
    expect(config(["--testnet"], { NODEX_MINER: "on" }).rpc.modules).toContain("mnr");
  });

  it("takes a lower minimum difficulty for a test chain", () => {
    expect(config(["--testnet"]).minDifficulty).toBeUndefined();
    expect(config(["--testnet", "--min-difficulty", "1000"]).minDifficulty).toBe(1000n);
    expect(() => config(["--min-difficulty", "0"])).toThrow(
      'invalid value for --min-difficulty: "0" is not a difficulty (a positive integer)',
    );
  });

  it("accepts the same network twice", () => {
    expect(config(["--regtest", "--network", "regtest"]).network.name).toBe("regtest");
  });

  it("rejects a config file value of the wrong type", () => {
    const file = join(tmp, "t.json");
    writeFileSync(file, JSON.stringify({ rpcPort: true }));
    expect(() => config(["--config", file])).toThrow(
      `invalid value for rpcPort in ${file}: expected a string or a number`,
    );
    writeFileSync(file, "[1]");
    expect(() => config(["--config", file])).toThrow(`config file ${file} must hold a JSON object`);
    expect(() => config(["--config", join(tmp, "missing.json")])).toThrow("file not found");
  });

  it("answers --help and --version before anything else", () => {
    expect(parseCommandLine({ argv: ["--bogus", "--help"], env: {}, isTTY: false }).kind).toBe(
      "help",
    );
    expect(parseCommandLine({ argv: ["--version"], env: {}, isTTY: false }).kind).toBe("version");
  });
});

describe("hosted mode's settings", () => {
  it("reads --hosted, the key file, keyless limits, weights, budgets and the pool's share", () => {
    const file = join(tmp, "hosted.json");
    writeFileSync(file, JSON.stringify({ rpcMethodWeights: ["eth_getLogs=100"] }));
    const c = config([
      "--hosted",
      "--api-key-file",
      "keys.txt",
      "--rpc-keyless-rate",
      "50",
      "--rpc-method-weight",
      "eth_call=30",
      "--rpc-budget-logs-ms",
      "2000",
      "--txpool-key-share",
      "16",
    ]);
    expect(c.rpc.hosted).toBe(true);
    expect(c.apiKeyFile).toBe("/srv/keys.txt");
    expect(c.rpc.keyless).toEqual({ rate: 50 });
    expect(c.rpc.methodWeights).toEqual({ eth_call: 30 });
    expect(c.rpc.budgets).toEqual({ logs: 2000 });
    expect(c.txpoolKeyShare).toBe(16);
    expect(config(["--config", file]).rpc.methodWeights).toEqual({ eth_getLogs: 100 });
    const plain = config([]);
    expect(plain.rpc.hosted).toBe(false);
    expect(plain.rpc.keyless).toBeUndefined();
    expect(plain.rpc.budgets).toBeUndefined();
  });

  it.each([
    [["--rpc-method-weight", "eth_call"], "--rpc-method-weight"],
    [["--rpc-method-weight", "eth_call=-1"], "--rpc-method-weight"],
    [["--rpc-keyless-rate", "0"], "--rpc-keyless-rate"],
    [["--txpool-key-share", "x"], "--txpool-key-share"],
    [["--api-key-file", " "], "--api-key-file"],
  ])("refuses %j", (argv, flag) => {
    expect(() => config(argv)).toThrow(UsageError);
    expect(() => config(argv)).toThrow(`invalid value for ${flag}`);
  });

  it("reads nodex keys and its flags", () => {
    const cmd = parseCommandLine({
      argv: [
        "keys",
        "create",
        "--testnet",
        "--name",
        "a",
        "--rate",
        "5",
        "--methods",
        "eth,net_version",
      ],
      env: {},
      isTTY: false,
      home: "/home/op",
    });
    expect(cmd).toMatchObject({
      kind: "keys",
      action: "create",
      name: "a",
      rate: 5,
      methods: ["eth", "net_version"],
      config: { datadir: "/home/op/.nodex/testnet" },
    });
    expect(() =>
      parseCommandLine({ argv: ["keys", "list", "--rpc-port", "1"], env: {}, isTTY: false }),
    ).toThrow("option --rpc-port does not apply to nodex keys");
  });

  it("reads the Redis of nodex keys from --redis or NODEX_REDIS, and no other command's", () => {
    const flag = parseCommandLine({
      argv: ["keys", "revoke", "key_1", "--redis", "redis://127.0.0.1:6379/2"],
      env: {},
      isTTY: false,
    });
    expect(flag).toMatchObject({ action: "revoke", config: { redis: "redis://127.0.0.1:6379/2" } });
    const env = parseCommandLine({
      argv: ["keys", "list"],
      env: { NODEX_REDIS: "rediss://u:p@redis.example:6380" },
      isTTY: false,
    });
    expect(env).toMatchObject({ config: { redis: "rediss://u:p@redis.example:6380" } });
    expect(() =>
      parseCommandLine({
        argv: ["keys", "list", "--redis", "127.0.0.1:6379"],
        env: {},
        isTTY: false,
      }),
    ).toThrow("write redis://127.0.0.1:6379");
    expect(() =>
      parseCommandLine({ argv: ["export", "x", "--redis", "redis://h"], env: {}, isTTY: false }),
    ).toThrow("option --redis does not apply to nodex export");
  });
});
