import { bytesToHex, deriveDevAccounts, signTransaction } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningNode, send, startNode } from "../helpers/node.js";

/** The start-up line that names the signature-recovery backend. */
function recoveryLine(node: RunningNode): Record<string, unknown> {
  const line = node
    .logs()
    .split("\n")
    .find((l) => l.includes('"msg":"Signature recovery"'));
  expect(line).toBeDefined();
  return JSON.parse(line!) as Record<string, unknown>;
}

/** A raw transfer from the first development account comes back with that account as `from`. */
async function expectSenderRecovered(node: RunningNode): Promise<void> {
  const [alice] = deriveDevAccounts();
  const tx = signTransaction(
    {
      nonce: 0n,
      gasPrice: 10n ** 9n,
      gasLimit: 21_000n,
      to: alice!.address,
      value: 1n,
      data: new Uint8Array(),
    },
    alice!.privateKey,
    33,
  );
  const rpc = (method: string, params: unknown[]) =>
    send(node.url, { jsonrpc: "2.0", id: 1, method, params });
  const sent = await rpc("eth_sendRawTransaction", [bytesToHex(tx.raw)]);
  expect(sent.json).toMatchObject({ result: bytesToHex(tx.hash) });
  const got = await rpc("eth_getTransactionByHash", [bytesToHex(tx.hash)]);
  expect(got.json).toMatchObject({ result: { from: bytesToHex(alice!.address) } });
}

describe("signature recovery backend", () => {
  let node: RunningNode | undefined;
  afterEach(async () => {
    await node?.stop();
    node = undefined;
  });

  // The secp256k1 package ships prebuilds for these platforms: the addon loads there.
  it.runIf(
    ["linux-x64", "darwin-arm64", "win32-x64"].includes(`${process.platform}-${process.arch}`),
  )("is libsecp256k1 by default here, in the start-up log and /health", async () => {
    node = await startNode();
    expect(recoveryLine(node)).toMatchObject({ backend: "libsecp256k1" });
    expect(recoveryLine(node)).not.toHaveProperty("reason");
    const res = await send(node.url, undefined, { method: "GET", path: "/health" });
    expect(res.json).toMatchObject({ status: "ok", signatureRecovery: "libsecp256k1" });
    await expectSenderRecovered(node);
  });

  it.each([
    ["NODEX_SECP256K1=noble", { env: { NODEX_SECP256K1: "noble" } }],
    ["--secp256k1 noble", { args: ["--secp256k1", "noble"] }],
  ])("is noble with %s, and still recovers senders", async (_, opts) => {
    node = await startNode(opts);
    expect(recoveryLine(node)).toMatchObject({ backend: "noble", reason: "noble was asked for" });
    const res = await send(node.url, undefined, { method: "GET", path: "/health" });
    expect(res.json).toMatchObject({ status: "ok", signatureRecovery: "noble" });
    await expectSenderRecovered(node);
  });
});
