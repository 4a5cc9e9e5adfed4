#!/usr/bin/env node
// Crypto bench (Nodex only): µs per secp256k1 public-key recovery on each backend of
// @nodex/types (libsecp256k1 through the secp256k1 addon, and @noble/curves), and µs per
// decodeTransaction of a signed transfer (RLP, hashes, sender recovery) with each selected.
// With --check N, also compares the two backends on N random signatures (about half of them
// recoverable, s in the upper half one time in two) and fails on the first difference.
//
//   npm run build && node bench/crypto/run.mjs [--count N] [--check N]
//
// See bench/crypto/README.md.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import {
  decodeTransaction,
  deriveDevAccounts,
  recoverPublicKey,
  SignatureRecoveryBackend,
  selectSignatureRecovery,
  signTransaction,
} from "../../packages/types/dist/index.js";

const { values } = parseArgs({
  options: {
    count: { type: "string", default: "2000" },
    check: { type: "string", default: "0" },
  },
});
const COUNT = Number(values.count);
const CHECK = Number(values.check);

const native = selectSignatureRecovery("auto");
console.log(`signature recovery with auto: ${JSON.stringify(native)}`);
if (native.backend !== SignatureRecoveryBackend.LIBSECP256K1) {
  console.log("libsecp256k1 is not available here: only noble is measured");
}
const backends =
  native.backend === SignatureRecoveryBackend.LIBSECP256K1
    ? [SignatureRecoveryBackend.LIBSECP256K1, SignatureRecoveryBackend.NOBLE]
    : [SignatureRecoveryBackend.NOBLE];

// Valid signatures without signing: random (hash, r, s) whose r is a curve point's x recover a
// key, and are that key's signature of the hash.
const signatures = [];
while (signatures.length < COUNT) {
  const c = { hash: randomBytes(32), signature: randomBytes(64), recovery: signatures.length & 1 };
  if (recoverPublicKey(c.hash, c.signature, c.recovery, backends[0]) !== undefined) {
    signatures.push(c);
  }
}

const [alice] = deriveDevAccounts();
const txs = [];
for (let i = 0; i < Math.min(COUNT, 500); i++) {
  txs.push(
    signTransaction(
      {
        nonce: BigInt(i),
        gasPrice: 10n ** 9n,
        gasLimit: 21_000n,
        to: alice.address,
        value: 1n,
        data: new Uint8Array(),
      },
      alice.privateKey,
      33,
    ).raw,
  );
}

function time(label, n, fn) {
  fn(Math.min(n, 50)); // warm-up
  const t0 = process.hrtime.bigint();
  fn(n);
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`${label.padEnd(44)} ${us.toFixed(1).padStart(8)} µs  (${n} runs)`);
  return us;
}

const results = {};
for (const backend of backends) {
  results[backend] = time(`recoverPublicKey, ${backend}`, signatures.length, (n) => {
    for (let i = 0; i < n; i++) {
      const c = signatures[i];
      if (recoverPublicKey(c.hash, c.signature, c.recovery, backend) === undefined) {
        throw new Error("a valid signature did not recover");
      }
    }
  });
}
for (const backend of backends) {
  selectSignatureRecovery(backend === SignatureRecoveryBackend.NOBLE ? "noble" : "auto");
  time(`decodeTransaction (sender recovered), ${backend}`, txs.length, (n) => {
    for (let i = 0; i < n; i++) decodeTransaction(txs[i]);
  });
}
selectSignatureRecovery("auto");
if (results.noble !== undefined && results.libsecp256k1 !== undefined) {
  console.log(`noble ÷ libsecp256k1: ${(results.noble / results.libsecp256k1).toFixed(1)}×`);
}

if (CHECK > 0 && backends.length === 2) {
  let recovered = 0;
  const t0 = Date.now();
  for (let i = 0; i < CHECK; i++) {
    const hash = randomBytes(32);
    const signature = randomBytes(64);
    const recovery = i & 1;
    const a = recoverPublicKey(hash, signature, recovery, SignatureRecoveryBackend.LIBSECP256K1);
    const b = recoverPublicKey(hash, signature, recovery, SignatureRecoveryBackend.NOBLE);
    const same = a === undefined ? b === undefined : b !== undefined && Buffer.from(a).equals(b);
    if (!same) {
      console.error(
        `differ on hash ${hash.toString("hex")} signature ${signature.toString("hex")} recovery ${recovery}`,
      );
      process.exit(1);
    }
    if (a !== undefined) recovered++;
  }
  console.log(
    `check: ${CHECK} random signatures, ${recovered} recovered, the same on both backends (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
  );
}
