// Other EVM nodes as a fork's upstream: `nodex --regtest --fork-url` of Anvil and of Hardhat's
// node (both serve eth_getProof, and their proofs chain to their blocks' state roots), and of a
// node that does not serve eth_getProof (a proxy of Anvil refusing it): a clear refusal at start.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Interface } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Nodex, startNodex } from "./helpers/nodex.js";
import { compile } from "./helpers/solidity.js";

const require = createRequire(import.meta.url);
const arch = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch];
const ANVIL = join(
  dirname(require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/package.json`)),
  "bin",
  process.platform === "win32" ? "anvil.exe" : "anvil",
);
const HARDHAT_CLI = join(
  dirname(require.resolve("hardhat/package.json")),
  "internal/cli/bootstrap.js",
);
const HARDHAT_PROJECT = fileURLToPath(new URL("../hardhat/", import.meta.url));
/** The first account of the mnemonic all three nodes use ("test test … junk"). */
const DEV0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
/** An account no node funds: what the upstream sent it is all it has. */
const PAYEE = "0x00000000000000000000000000000000000b0b00";

const counter = compile("Counter.sol", "Counter");
const abi = new Interface(counter.abi as never);

let id = 0;
async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}
const hex = (n: number | bigint) => `0x${n.toString(16)}`;

interface Receipt {
  readonly contractAddress: string;
  readonly status: string;
}

/**
 * The receipt of `hash`: Anvil answers eth_sendTransaction before its block is in, so the
 * receipt is asked again until it is there (at most 500 times, 10 ms apart).
 */
async function mined(url: string, hash: unknown): Promise<Receipt> {
  for (let i = 0; i < 500; i++) {
    const receipt = (await rpc(url, "eth_getTransactionReceipt", [hash])) as Receipt | null;
    if (receipt !== null) return receipt;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`transaction ${String(hash)} was not mined on ${url}`);
}

interface Upstream {
  readonly url: string;
  stop(): Promise<void>;
}

/** Spawns `cmd`, resolves with its URL once `listening` matches a line of its output. */
function spawnUpstream(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env: Record<string, string> },
  listening: RegExp,
  cleanup: () => void,
): Promise<Upstream> {
  const child: ChildProcess = spawn(cmd, args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let output = "";
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start:\n${output}`)), 30_000);
    const seen = (d: Buffer) => {
      output += d.toString("utf8");
      const match = listening.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited with ${code}:\n${output}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    cleanup();
  };
  return url.then(
    (u) => ({ url: u, stop }),
    async (err) => {
      await stop();
      throw err;
    },
  );
}

/** Anvil on a free port of 127.0.0.1, with a home of its own (it keeps states under it). */
function startAnvil(): Promise<Upstream> {
  const home = mkdtempSync(join(tmpdir(), "nodex-anvil-home-"));
  return spawnUpstream(
    ANVIL,
    ["--host", "127.0.0.1", "--port", "0"],
    { env: { HOME: home } },
    /Listening on (127\.0\.0\.1:\d+)/,
    () => rmSync(home, { recursive: true, force: true }),
  ).then((u) => ({ ...u, url: `http://${u.url}` }));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `hardhat node` of the project in ../hardhat, on a free port of 127.0.0.1. */
async function startHardhatNode(): Promise<Upstream> {
  const port = await freePort();
  return spawnUpstream(
    process.execPath,
    [HARDHAT_CLI, "node", "--hostname", "127.0.0.1", "--port", String(port)],
    { cwd: HARDHAT_PROJECT, env: { HARDHAT_DISABLE_TELEMETRY_PROMPT: "true", DO_NOT_TRACK: "1" } },
    /JSON-RPC server at (http:\/\/127\.0\.0\.1:\d+)/,
    () => {},
  );
}

/**
 * A Counter deployed and counted to 3 on `url` from its first account, and coin sent to PAYEE;
 * the contract's address and the block after all of it.
 */
async function deployCounter(url: string): Promise<{ address: string; block: number }> {
  const send = async (tx: Record<string, string>) => {
    return mined(url, await rpc(url, "eth_sendTransaction", [{ from: DEV0, ...tx }]));
  };
  const deployed = await send({ data: counter.bytecode });
  expect(deployed.status).toBe("0x1");
  for (let i = 0; i < 3; i++)
    await send({ to: deployed.contractAddress, data: abi.encodeFunctionData("increment") });
  await send({ to: PAYEE, value: hex(12_345n) });
  return {
    address: deployed.contractAddress,
    block: Number(await rpc(url, "eth_blockNumber")),
  };
}

/** What a fork must read as the upstream reads at the fork block. */
async function expectSameReads(fork: string, upstream: string, address: string, block: number) {
  const at = hex(block);
  const count = abi.encodeFunctionData("count");
  expect(await rpc(fork, "eth_call", [{ to: address, data: count }, "latest"])).toBe(
    await rpc(upstream, "eth_call", [{ to: address, data: count }, at]),
  );
  expect(
    BigInt((await rpc(fork, "eth_call", [{ to: address, data: count }, "latest"])) as string),
  ).toBe(3n);
  expect(await rpc(fork, "eth_getCode", [address, "latest"])).toBe(
    await rpc(upstream, "eth_getCode", [address, at]),
  );
  const slot0 = `0x${"0".repeat(64)}`;
  expect(BigInt((await rpc(fork, "eth_getStorageAt", [address, slot0, "latest"])) as string)).toBe(
    BigInt((await rpc(upstream, "eth_getStorageAt", [address, slot0, at])) as string),
  );
  expect(await rpc(fork, "eth_getBalance", [PAYEE, "latest"])).toBe(hex(12_345n));
  expect(await rpc(fork, "eth_getTransactionCount", [DEV0, "latest"])).toBe(
    await rpc(upstream, "eth_getTransactionCount", [DEV0, at]),
  );
}

function forkArgs(url: string, block: number): string[] {
  return ["--fork-url", url, "--fork-block", String(block)];
}

describe("a fork of Anvil", () => {
  let anvil: Upstream;
  let fork: Nodex;
  let contract: string;
  let forkBlock: number;

  beforeAll(async () => {
    anvil = await startAnvil();
    ({ address: contract, block: forkBlock } = await deployCounter(anvil.url));
    // Anvil goes on past the fork block: the fork keeps to the block it was told.
    await rpc(anvil.url, "anvil_mine", [hex(3)]);
    fork = await startNodex({ args: forkArgs(anvil.url, forkBlock) });
  }, 60_000);

  afterAll(async () => {
    await fork?.stop();
    await anvil?.stop();
  });

  it("reads Anvil's state at the fork block, each proof checked against its state root", async () => {
    await expectSameReads(fork.url, anvil.url, contract, forkBlock);
    // The fork's proof at the fork block against Anvil's: the same contract storage trie.
    const slot0 = `0x${"0".repeat(64)}`;
    const theirs = (await rpc(anvil.url, "eth_getProof", [contract, [slot0], hex(forkBlock)])) as {
      storageHash: string;
      codeHash: string;
      accountProof: string[];
      storageProof: { proof: string[] }[];
    };
    const ours = (await rpc(fork.url, "eth_getProof", [contract, [slot0], hex(forkBlock)])) as {
      storageHash: string;
      codeHash: string;
      accountProof: string[];
      storageProof: { proof: string[] }[];
    };
    expect(ours.storageProof[0]!.proof).toEqual(theirs.storageProof[0]!.proof);
    // The account's leaf is Anvil's; the nodes above it differ only as far as the development
    // accounts' funds, given on top of the fork block's state, changed the trie.
    expect(ours.accountProof.at(-1)).toBe(theirs.accountProof.at(-1));
    expect(ours.storageHash).toBe(theirs.storageHash);
    expect(ours.codeHash).toBe(theirs.codeHash);
  });

  it("makes the fork block's header from Anvil's fields, and says so", async () => {
    expect(fork.logs()).toContain(`"header":"made from the upstream's fields"`);
    const theirs = (await rpc(anvil.url, "eth_getBlockByNumber", [hex(forkBlock), false])) as {
      hash: string;
      stateRoot: string;
    };
    // By number, the fork block is Anvil's, as Anvil answers it.
    const byNumber = (await rpc(fork.url, "eth_getBlockByNumber", [hex(forkBlock), false])) as {
      hash: string;
    };
    expect(byNumber.hash).toBe(theirs.hash);
    // The next block's parent is the header the chain holds: another hash, Anvil's state root.
    await rpc(fork.url, "evm_mine");
    const next = (await rpc(fork.url, "eth_getBlockByNumber", [hex(forkBlock + 1), false])) as {
      parentHash: string;
    };
    expect(next.parentHash).not.toBe(theirs.hash);
    const parent = (await rpc(fork.url, "eth_getBlockByHash", [next.parentHash, false])) as {
      number: string;
      hash: string;
      stateRoot: string;
    };
    expect(parent.number).toBe(hex(forkBlock));
    expect(parent.hash).toBe(next.parentHash);
    expect(parent.stateRoot).toBe(theirs.stateRoot);
    // Anvil's blocks past the fork block are not this chain's.
    expect(await rpc(fork.url, "eth_getBlockByNumber", [hex(forkBlock + 2), false])).toBeNull();
  });

  it("refuses Anvil's genesis block, whose header names an empty state", async () => {
    const failed = await startNodex({ args: forkArgs(anvil.url, 0) }).then(
      async (node) => {
        await node.stop();
        return undefined;
      },
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/block 0 has the empty state root, yet its eth_getProof shows accounts/);
    expect(failed).toContain("--fork-block 1");
  });

  it("goes on from Anvil's state: a transaction on the contract", async () => {
    const receipt = await mined(
      fork.url,
      await rpc(fork.url, "eth_sendTransaction", [
        { from: DEV0, to: contract, data: abi.encodeFunctionData("increment") },
      ]),
    );
    expect(receipt.status).toBe("0x1");
    const count = abi.encodeFunctionData("count");
    expect(
      BigInt((await rpc(fork.url, "eth_call", [{ to: contract, data: count }])) as string),
    ).toBe(4n);
    expect(
      BigInt((await rpc(anvil.url, "eth_call", [{ to: contract, data: count }])) as string),
    ).toBe(3n);
  });
});

describe("a fork of Hardhat's node", () => {
  it("reads its state at the fork block (Hardhat 2's node serves eth_getProof)", async () => {
    const hardhat = await startHardhatNode();
    let fork: Nodex | undefined;
    try {
      const { address, block } = await deployCounter(hardhat.url);
      fork = await startNodex({ args: forkArgs(hardhat.url, block) });
      await expectSameReads(fork.url, hardhat.url, address, block);
    } finally {
      await fork?.stop();
      await hardhat.stop();
    }
  }, 60_000);
});

describe("a fork of a node without eth_getProof", () => {
  let anvil: Upstream;
  let proxy: Server;
  let proxyUrl: string;
  let forkBlock: number;

  beforeAll(async () => {
    anvil = await startAnvil();
    // Anvil behind a proxy that answers eth_getProof as a node that does not serve it.
    proxy = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8").on("data", (d: string) => {
        body += d;
      });
      req.on("end", async () => {
        // One call or a batch: Anvil answers all but eth_getProof, refused as not served.
        type Call = { id: unknown; method: string };
        const calls = JSON.parse(body) as Call[] | Call;
        const upstream = await fetch(anvil.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        const answers = (await upstream.json()) as { id: unknown }[] | { id: unknown };
        const methods = new Map(
          (Array.isArray(calls) ? calls : [calls]).map((c) => [JSON.stringify(c.id), c.method]),
        );
        const refuse = (a: { id: unknown }) =>
          methods.get(JSON.stringify(a.id)) === "eth_getProof"
            ? {
                jsonrpc: "2.0",
                id: a.id,
                error: { code: -32601, message: "Method eth_getProof not found" },
              }
            : a;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(Array.isArray(answers) ? answers.map(refuse) : refuse(answers)));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    // A block past genesis: Anvil's genesis state is regtest's (the same funded accounts), which
    // the fork has without asking.
    await mined(
      anvil.url,
      await rpc(anvil.url, "eth_sendTransaction", [{ from: DEV0, to: PAYEE, value: hex(1) }]),
    );
    forkBlock = Number(await rpc(anvil.url, "eth_blockNumber"));
    expect(forkBlock).toBeGreaterThan(0);
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
    await anvil?.stop();
  });

  it("refuses to start at its first state read, saying why and what to do", async () => {
    const failed = await startNodex({ args: forkArgs(proxyUrl, forkBlock) }).then(
      async (node) => {
        await node.stop();
        return undefined;
      },
      (err: Error) => err.message,
    );
    expect(failed).toBeDefined();
    expect(failed).toMatch(/has no eth_getProof/);
    expect(failed).toMatch(/--fork-verify off/);
  });

  it("--fork-verify off is refused as not supported yet", async () => {
    const failed = await startNodex({
      args: ["--fork-url", proxyUrl, "--fork-verify", "off"],
    }).then(
      async (node) => {
        await node.stop();
        return undefined;
      },
      (err: Error) => err.message,
    );
    expect(failed).toBeDefined();
    expect(failed).toMatch(/--fork-verify off/);
    expect(failed).toMatch(/not supported yet/);
  });
});
