// The chain side shared by the benches that send transactions (bench/chain, bench/logs): the
// funded dev account, the ERC-20 they deploy (Token.sol, compiled with solc at start), signing
// with ethers v6, and waiting for a receipt.
import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sleep } from "./format.mjs";
import { benchRequireOf } from "./setup.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/** Account #0 of the dev mnemonic: funded on all four nodes. */
export const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
export const ACCOUNT0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
export const TOKEN_SUPPLY = 10n ** 24n;
export const GAS_TRANSFER = 21_000n;
export const GAS_TOKEN_TRANSFER = 100_000n;
export const GAS_DEPLOY = 2_000_000n;
/** keccak256("Transfer(address,address,uint256)"): topic 0 of the token's Transfer log. */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

export const hex = (n) => `0x${BigInt(n).toString(16)}`;
/** A 32-byte word (an indexed address or uint as a topic), lower case. */
export const word = (n) => `0x${BigInt(n).toString(16).padStart(64, "0")}`;

let ethers;
let signingKey;

/** Imports ethers from bench/node_modules (after ensureBenchDeps) and checks KEY0. */
export async function loadEthers() {
  if (ethers) return ethers;
  ethers = await import("ethers");
  signingKey = new ethers.SigningKey(KEY0);
  if (new ethers.Wallet(KEY0).address !== ACCOUNT0) throw new Error("KEY0 is not account #0");
  return ethers;
}

/**
 * The contract `name` of the Solidity file at `path`, compiled with the solc npm package (Paris:
 * no PUSH0, so Ganache 7 runs it too; optimizer on): {abi, bytecode, solc}.
 */
export function compileContract(path, name) {
  const solc = benchRequireOf("solc");
  const file = basename(path);
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: "Solidity",
        sources: { [file]: { content: readFileSync(path, "utf8") } },
        settings: {
          evmVersion: "paris",
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
        },
      }),
    ),
  );
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const c = output.contracts[file][name];
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, solc: solc.version() };
}

/** Token.sol (beside this file) compiled: {abi, bytecode, iface, solc}. */
export function compileToken() {
  const token = compileContract(join(here, "Token.sol"), "Token");
  return { ...token, iface: new ethers.Interface(token.abi) };
}

/** A signed legacy (type 0) transaction from account #0: {raw, hash}. */
export function sign({ chainId, nonce, gasPrice, gasLimit, to, value = 0n, data = "0x" }) {
  const tx = ethers.Transaction.from({
    type: 0,
    chainId,
    nonce,
    gasPrice,
    gasLimit,
    to,
    value,
    data,
  });
  tx.signature = signingKey.sign(tx.unsignedHash);
  return { raw: tx.serialized, hash: tx.hash };
}

/**
 * Waits until `hash` is mined, as long as account #0's nonce keeps moving: null after `idleMs`
 * without progress (a node that stopped mining).
 */
export async function waitMined(rpc, hash, idleMs = 5000) {
  let deadline = Date.now() + idleMs;
  let lastNonce = -1;
  for (let polls = 1; ; polls++) {
    const receipt = await rpc.call("eth_getTransactionReceipt", [hash]);
    if (receipt) return receipt;
    if (polls % 100 === 0) {
      const n = Number(await rpc.call("eth_getTransactionCount", [ACCOUNT0, "latest"]));
      if (n !== lastNonce) {
        lastNonce = n;
        deadline = Date.now() + idleMs;
      }
    }
    if (Date.now() > deadline) return null;
    if (polls > 10) await sleep(1);
  }
}
