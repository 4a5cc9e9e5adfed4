import { secp256k1 } from "@noble/curves/secp256k1.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Address,
  bigintToBytes,
  bytesToHex,
  contractAddress,
  DecodeError,
  decodeTransaction,
  deriveDevAccounts,
  hexToBytes,
  rlpDecode,
  rlpEncode,
  signingHash,
  signTransaction,
  TransactionError,
  transactionFromItem,
  type UnsignedTransaction,
} from "../../../src/index.js";

const one = new Uint8Array([1]);

// EIP-155's own example: key 0x4646…46, nonce 9, 20 gwei, 21000 gas, to 0x3535…35, 1 ether, chain 1.
const EIP155_RAW =
  "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
const EIP155_KEY = new Uint8Array(32).fill(0x46);
const EIP155_TX: UnsignedTransaction = {
  nonce: 9n,
  gasPrice: 20_000_000_000n,
  gasLimit: 21_000n,
  to: new Uint8Array(20).fill(0x35) as Address,
  value: 10n ** 18n,
  data: new Uint8Array(),
};

describe("legacy transactions", () => {
  it("decode EIP-155's example and recover its sender", () => {
    const tx = decodeTransaction(hexToBytes(EIP155_RAW));
    expect(tx.chainId).toBe(1);
    expect(tx.v).toBe(37n);
    expect(tx.nonce).toBe(9n);
    expect(tx.value).toBe(10n ** 18n);
    expect(bytesToHex(tx.from)).toBe("0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f");
    expect(bytesToHex(tx.hash)).toBe(
      "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788",
    );
    expect(bytesToHex(signingHash(EIP155_TX, 1))).toBe(
      "0xdaf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53",
    );
  });

  it("sign EIP-155's example to the same bytes", () => {
    expect(bytesToHex(signTransaction(EIP155_TX, EIP155_KEY, 1).raw)).toBe(EIP155_RAW);
  });

  it("round-trip: what is signed decodes to the same transaction and sender", () => {
    const account = deriveDevAccounts()[0]!;
    fc.assert(
      fc.property(
        fc.record({
          nonce: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
          gasPrice: fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
          gasLimit: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
          to: fc.option(fc.uint8Array({ minLength: 20, maxLength: 20 }), { nil: null }),
          value: fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
          data: fc.uint8Array({ maxLength: 100 }),
        }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (fields, chainId) => {
          const unsigned = fields as UnsignedTransaction;
          const signed = signTransaction(unsigned, account.privateKey, chainId);
          const decoded = decodeTransaction(signed.raw);
          expect(decoded).toEqual(signed);
          // A wallet passes the address it holds: the same transaction.
          expect(signTransaction(unsigned, account.privateKey, chainId, account.address)).toEqual(
            signed,
          );
          expect(decoded.from).toEqual(account.address);
          expect(decoded.chainId).toBe(chainId);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("accept an unprotected signature (v = 27 or 28)", () => {
    const key = deriveDevAccounts()[1]!;
    const sig = secp256k1.Signature.fromBytes(
      secp256k1.sign(signingHash(EIP155_TX, undefined), key.privateKey, {
        prehash: false,
        format: "recovered",
      }),
      "recovered",
    );
    const raw = rlpEncode([
      bigintToBytes(9n),
      bigintToBytes(20_000_000_000n),
      bigintToBytes(21_000n),
      EIP155_TX.to!,
      bigintToBytes(10n ** 18n),
      new Uint8Array(),
      bigintToBytes(27n + BigInt(sig.recovery!)),
      bigintToBytes(sig.r),
      bigintToBytes(sig.s),
    ]);
    const tx = decodeTransaction(raw);
    expect(tx.chainId).toBeUndefined();
    expect(tx.from).toEqual(key.address);
  });

  it("refuse a high-s signature (EIP-2)", () => {
    const tx = decodeTransaction(hexToBytes(EIP155_RAW));
    const n = secp256k1.Point.CURVE().n;
    const flipped = rlpEncode([
      bigintToBytes(tx.nonce),
      bigintToBytes(tx.gasPrice),
      bigintToBytes(tx.gasLimit),
      tx.to!,
      bigintToBytes(tx.value),
      tx.data,
      bigintToBytes(tx.v === 37n ? 38n : 37n),
      bigintToBytes(tx.r),
      bigintToBytes(n - tx.s),
    ]);
    expect(() => decodeTransaction(flipped)).toThrow(
      new TransactionError(
        "TX_INVALID_SIGNATURE",
        "invalid transaction signature: s is in the upper half of the curve order (EIP-2)",
      ),
    );
  });

  it.each([
    [0x03, "transaction type 3 is not supported: send a legacy, type 1 or type 2 transaction"],
    [0x00, "transaction type 0 is not supported: send a legacy, type 1 or type 2 transaction"],
    [0x7f, "transaction type 127 is not supported: send a legacy, type 1 or type 2 transaction"],
  ])("refuse a typed envelope of type %i", (type, message) => {
    const raw = new Uint8Array([type, ...hexToBytes(EIP155_RAW)]);
    expect(() => decodeTransaction(raw)).toThrow(TransactionError);
    expect(() => decodeTransaction(raw)).toThrow(message);
  });

  it.each([
    ["empty", "0x", "invalid transaction: empty"],
    [
      "8 items",
      rlpHex(Array(8).fill(new Uint8Array())),
      "invalid transaction: expected 9 items, got 8",
    ],
    ["a string", "0x83616263", "invalid transaction: expected a list, got a byte string"],
    ["truncated", EIP155_RAW.slice(0, -4), "invalid transaction:"],
    [
      "an item that runs past the end",
      "0xc980808094",
      "invalid transaction: invalid RLP: an item is longer than the data that holds it",
    ],
    [
      "a leading zero in nonce",
      rlpHex([new Uint8Array([0, 9]), one, one, new Uint8Array(), one, one, one, one, one]),
      "invalid transaction nonce: integer has leading zero bytes",
    ],
    [
      "a short to",
      rlpHex([
        new Uint8Array(),
        new Uint8Array(),
        new Uint8Array(),
        new Uint8Array(19),
        ...Array(5).fill(new Uint8Array([1])),
      ]),
      "invalid transaction to: expected 20 bytes or none, got 19",
    ],
  ])("refuse %s with a DecodeError", (_what, hex, message) => {
    let thrown: unknown;
    try {
      decodeTransaction(hexToBytes(hex));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(DecodeError);
    expect((thrown as Error).message.startsWith(message)).toBe(true);
  });

  it("refuse a v that is neither 27/28 nor EIP-155", () => {
    const items = [1, 1, 1, 0, 1, 0].map((b) => (b ? new Uint8Array([1]) : new Uint8Array()));
    const raw = rlpEncode([
      ...items,
      new Uint8Array([30]),
      new Uint8Array([1]),
      new Uint8Array([1]),
    ]);
    expect(() => decodeTransaction(raw)).toThrow(
      "invalid transaction signature: v 30 is neither 27, 28 nor an EIP-155 value",
    );
  });

  it("never throws anything but a DecodeError or TransactionError on arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          decodeTransaction(bytes);
        } catch (err) {
          expect(err instanceof DecodeError || err instanceof TransactionError).toBe(true);
        }
      }),
    );
  });

  it("take a known sender as from, with the same hash and raw, and still check the signature", () => {
    const raw = hexToBytes(EIP155_RAW);
    const recovered = decodeTransaction(raw);
    expect(decodeTransaction(raw, recovered.from)).toEqual(recovered);
    const other = new Uint8Array(20).fill(0x77) as Address;
    const given = decodeTransaction(raw, other);
    expect(bytesToHex(given.from)).toBe(bytesToHex(other));
    expect({ ...given, from: recovered.from }).toEqual(recovered);
    expect(bytesToHex(transactionFromItem(rlpDecode(raw, "tx"), raw, other).from)).toBe(
      bytesToHex(other),
    );
    expect(() => decodeTransaction(raw, new Uint8Array(21) as Address)).toThrow(DecodeError);
    const highS = rlpEncode([
      ...(rlpDecode(raw, "tx") as Uint8Array[]).slice(0, 8),
      bigintToBytes(secp256k1.Point.CURVE().n - 1n),
    ]);
    expect(() => decodeTransaction(highS, other)).toThrow(TransactionError);
  });

  it("compute contract addresses", () => {
    const sender = hexToBytes("0x6ac7ea33f8831ea9dcc53393aaa88b25a785dbf0");
    expect(bytesToHex(contractAddress(sender, 0n))).toBe(
      "0xcd234a471b72ba2f1ccf0a70fcaba648a5eecd8d",
    );
    expect(bytesToHex(contractAddress(sender, 1n))).toBe(
      "0x343c43a37d37dff08ae8c4a11544c718abb4fcf8",
    );
  });
});

function rlpHex(items: Uint8Array[]): string {
  return bytesToHex(rlpEncode(items));
}
