import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hexlify, toUtf8Bytes, verifyMessage, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3 } from "web3";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The node's own accounts through web3.js's personal API, raw JSON-RPC and ethers: keystore
// accounts (light scrypt on regtest), unlocks, eth_sign, eth_sendTransaction and a restart.
const DEV0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const IMPORTED_KEY = "8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63";
const IMPORTED = "0xfe3b557e8fb62b89f4916b721be55ceb828dbd73";
const SINK = "0x000000000000000000000000000000000000beef";

const datadir = mkdtempSync(join(tmpdir(), "nodex-e2e-accounts-"));
let node: RunningNode;
let web3: Web3;
beforeAll(async () => {
  node = await startNode({ datadir });
  web3 = new Web3(node.url);
});
afterAll(async () => {
  await node?.stop();
  rmSync(datadir, { recursive: true, force: true });
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${res.error.message}`);
  return res.result;
}

async function receipt(hash: unknown) {
  return (await result("eth_getTransactionReceipt", [hash])) as {
    status: string;
    from: string;
    blockNumber: string;
  };
}

let created: string;

describe("eth_sendTransaction", () => {
  it("fills gas 90000, the node's gas price and the pending nonce, and regtest mines it", async () => {
    const nonce = await result("eth_getTransactionCount", [DEV0, "latest"]);
    const gasPrice = await result("eth_gasPrice");
    const hash = await result("eth_sendTransaction", [{ from: DEV0, to: SINK, value: "0x10" }]);
    const tx = (await result("eth_getTransactionByHash", [hash])) as Record<string, unknown>;
    expect(tx).toMatchObject({ from: DEV0, to: SINK, value: "0x10", gas: "0x15f90", gasPrice });
    expect(tx.nonce).toBe(nonce);
    expect(tx.chainId ?? "0x21").toBe("0x21");
    expect((await receipt(hash)).status).toBe("0x1");
  });

  it("wants a from that the node holds", async () => {
    expect(await call(node.url, "eth_sendTransaction", [{ to: SINK }])).toMatchObject({
      error: { code: -32602, message: "invalid argument 0: from: the sender is required" },
    });
    expect(
      await call(node.url, "eth_sendTransaction", [{ from: `0x${"12".repeat(20)}`, to: SINK }]),
    ).toMatchObject({
      error: { code: -32000, message: `unknown account 0x${"12".repeat(20)}` },
    });
  });
});

describe("personal, through web3.js", () => {
  it("makes a new account, listed after the development accounts, locked", async () => {
    created = (await web3.eth.personal.newAccount("correct horse")).toLowerCase();
    expect(created).toMatch(/^0x[0-9a-f]{40}$/);
    const accounts = (await result("eth_accounts")) as string[];
    expect(accounts).toHaveLength(21);
    expect(accounts[0]).toBe(DEV0);
    expect(accounts[20]).toBe(created);
    expect((await web3.eth.personal.getAccounts()).map((a) => a.toLowerCase())).toEqual(accounts);
    expect(await call(node.url, "eth_sign", [created, "0x01"])).toMatchObject({
      error: { code: -32000, message: expect.stringContaining("authentication needed") },
    });
    expect(await call(node.url, "personal_dumpRawKey", [created])).toMatchObject({
      error: { code: -32000, message: expect.stringContaining("is locked") },
    });
  });

  it("writes a v3 key file, mode 0600, that ethers decrypts", async () => {
    const dir = join(datadir, "keystore");
    const names = readdirSync(dir);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(new RegExp(`^UTC--.+--${created.slice(2)}$`));
    expect(statSync(join(dir, names[0]!)).mode & 0o777).toBe(0o600);
    const json = readFileSync(join(dir, names[0]!), "utf8");
    expect(JSON.parse(json).crypto.kdfparams).toMatchObject({ n: 4096, p: 6 });
    const wallet = await Wallet.fromEncryptedJson(json, "correct horse");
    expect(wallet.address.toLowerCase()).toBe(created);
  });

  it("unlocks (false for a wrong passphrase), then sends and signs from the account", async () => {
    expect(await web3.eth.personal.unlockAccount(created, "wrong", 60)).toBe(false);
    expect(await web3.eth.personal.unlockAccount(created, "correct horse", 60)).toBe(true);
    const funding = await result("eth_sendTransaction", [
      { from: DEV0, to: created, value: "0xde0b6b3a7640000" },
    ]);
    expect((await receipt(funding)).status).toBe("0x1");
    const hash = await result("eth_sendTransaction", [{ from: created, to: SINK, value: "0x1" }]);
    const mined = await receipt(hash);
    expect(mined).toMatchObject({ status: "0x1", from: created });

    const message = hexlify(toUtf8Bytes("Nodex signs this"));
    const signature = (await result("eth_sign", [created, message])) as string;
    expect(signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(["1b", "1c"]).toContain(signature.slice(-2));
    expect(verifyMessage(toUtf8Bytes("Nodex signs this"), signature).toLowerCase()).toBe(created);

    const key = (await result("personal_dumpRawKey", [created])) as string;
    expect(new Wallet(key).address.toLowerCase()).toBe(created);
  });

  it("locks again: eth_sendTransaction refuses, personal_sendTransaction signs with the passphrase", async () => {
    expect(await web3.eth.personal.lockAccount(created)).toBe(true);
    expect(
      await call(node.url, "eth_sendTransaction", [{ from: created, to: SINK, value: "0x1" }]),
    ).toMatchObject({ error: { code: -32000 } });
    const hash = await web3.eth.personal.sendTransaction(
      {
        from: created,
        to: SINK,
        value: "0x2",
        gas: "0x5208",
        gasPrice: await web3.eth.getGasPrice(),
      },
      "correct horse",
    );
    expect((await receipt(hash)).status).toBe("0x1");
    expect(
      await call(node.url, "personal_sendTransaction", [
        { from: created, to: SINK, value: "0x1" },
        "wrong",
      ]),
    ).toMatchObject({
      error: { code: -32000, message: "could not decrypt key with given passphrase" },
    });
    expect(await call(node.url, "eth_sign", [created, "0x01"])).toMatchObject({
      error: { code: -32000 },
    });
  });

  it("imports a raw key (without 0x) and dumps it only while unlocked", async () => {
    const address = await web3.eth.personal.importRawKey(IMPORTED_KEY, "pw");
    expect(address.toLowerCase()).toBe(IMPORTED);
    expect(await call(node.url, "personal_dumpRawKey", [IMPORTED])).toMatchObject({
      error: { code: -32000 },
    });
    expect(await result("personal_unlockAccount", [IMPORTED, "pw"])).toBe(true);
    expect(await result("personal_dumpRawKey", [IMPORTED])).toBe(`0x${IMPORTED_KEY}`);
    expect(await call(node.url, "personal_importRawKey", [`0x${IMPORTED_KEY}`, "x"])).toMatchObject(
      { error: { code: -32000, message: "account already exists" } },
    );
    const bad = await call(node.url, "personal_importRawKey", ["0x1234", "x"]);
    expect(bad).toMatchObject({ error: { code: -32602 } });
  });

  it("makes the reference node's seed accounts, unlocked and not written to disk", async () => {
    const address = await result("personal_newAccountWithSeed", ["nodex seed"]);
    const sig = (await result("eth_sign", [address, "0x68656c6c6f"])) as string;
    expect(verifyMessage("hello", sig).toLowerCase()).toBe(address);
    expect(readdirSync(join(datadir, "keystore"))).toHaveLength(2);
  });

  it("answers -32000 for unknown accounts", async () => {
    const unknown = `0x${"ab".repeat(20)}`;
    for (const [method, params] of [
      ["eth_sign", [unknown, "0x00"]],
      ["personal_unlockAccount", [unknown, "pw", 10]],
      ["personal_lockAccount", [unknown]],
      ["personal_dumpRawKey", [unknown]],
    ] as const) {
      expect(await call(node.url, method, [...params])).toMatchObject({
        error: { code: -32000, message: `unknown account ${unknown}` },
      });
    }
  });
});

describe("a restart", () => {
  it("keeps keystore accounts, locked; seed accounts are gone", async () => {
    await node.stop();
    node = await startNode({ datadir });
    const accounts = (await result("eth_accounts")) as string[];
    expect(accounts.slice(20)).toEqual([created, IMPORTED]);
    expect(await call(node.url, "eth_sign", [created, "0x01"])).toMatchObject({
      error: { code: -32000, message: expect.stringContaining("authentication needed") },
    });
    expect(await result("personal_unlockAccount", [created, "correct horse", 0])).toBe(true);
    const sig = (await result("eth_sign", [created, "0x01"])) as string;
    expect(verifyMessage(new Uint8Array([1]), sig).toLowerCase()).toBe(created);
  });
});
