import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bip34Height,
  coinbaseHeight,
  coinbaseWithoutWitness,
  compressCoinbase,
  compressCoinbaseAt,
  encodeBip34Height,
  encodeBitcoinTransaction,
  parseBitcoinBlock,
  RSK_TAG,
  splitCompressedCoinbase,
  syntheticCoinbase,
} from "../../src/index.js";
import { hex, rskBlock0x1b4, testnetBlock926485, toHex } from "./vectors.js";

/** A coinbase as pool software writes one: the height, an extra-nonce, a tagged OP_RETURN output. */
function coinbase(scriptSig: Uint8Array, prevIndex = 0xffffffff): Uint8Array {
  return encodeBitcoinTransaction(
    {
      version: 1,
      inputs: [
        { prevTxid: new Uint8Array(32), prevIndex, scriptSig, sequence: 0xffffffff, witness: [] },
      ],
      outputs: [
        {
          value: 0n,
          scriptPubKey: Uint8Array.of(0x6a, 41, ...RSK_TAG, ...new Uint8Array(32).fill(7)),
        },
      ],
      lockTime: 0,
      hasWitness: false,
    },
    false,
  );
}

describe("encodeBip34Height", () => {
  it("writes what Bitcoin Core's CScript() << nHeight writes", () => {
    expect(toHex(encodeBip34Height(0n))).toBe("00");
    expect(toHex(encodeBip34Height(1n))).toBe("51");
    expect(toHex(encodeBip34Height(16n))).toBe("60");
    expect(toHex(encodeBip34Height(17n))).toBe("0111");
    expect(toHex(encodeBip34Height(127n))).toBe("017f");
    expect(toHex(encodeBip34Height(128n))).toBe("028000");
    expect(toHex(encodeBip34Height(227_931n))).toBe("035b7a03"); // BIP34's activation block
    expect(toHex(encodeBip34Height(926_485n))).toBe("0315230e");
    expect(() => encodeBip34Height(-1n)).toThrow(RangeError);
    expect(() => encodeBip34Height(1n << 39n)).toThrow(RangeError);
  });
});

describe("bip34Height", () => {
  it("reads the height of a real coinbase (Bitcoin testnet3 block 926485)", () => {
    const { height, block } = testnetBlock926485();
    const tx = parseBitcoinBlock(block).transactions[0]!;
    expect(bip34Height(tx.inputs[0]!.scriptSig)).toBe(BigInt(height));
  });

  it("reads back every height it encodes, whatever follows", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 39n) - 1n }),
        fc.uint8Array({ maxLength: 20 }),
        (height, rest) => {
          expect(bip34Height(Uint8Array.of(...encodeBip34Height(height), ...rest))).toBe(height);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("states no height for other starts", () => {
    expect(bip34Height(new Uint8Array())).toBeUndefined();
    expect(bip34Height(hex("0105"))).toBeUndefined(); // 5 is OP_5, not a push
    expect(bip34Height(hex("021100"))).toBeUndefined(); // padded
    expect(bip34Height(hex("0181"))).toBeUndefined(); // negative
    expect(bip34Height(hex("0315230e").subarray(0, 3))).toBeUndefined(); // cut short
    expect(bip34Height(hex("080000000000000000"))).toBeUndefined(); // an 8-byte extra-nonce
    expect(bip34Height(hex("4c0111"))).toBeUndefined(); // OP_PUSHDATA1
    expect(bip34Height(hex("4f"))).toBeUndefined(); // OP_1NEGATE
  });
});

describe("coinbaseHeight", () => {
  it("reads the height of a coinbase kept whole in the proof (tag in the first 64 bytes)", () => {
    const cb = coinbase(encodeBip34Height(926_485n));
    const compressed = compressCoinbase(cb);
    expect(splitCompressedCoinbase(compressed).hashedLength).toBe(0n);
    expect(coinbaseHeight(compressed)).toBe(926_485n);
  });

  it("states none when the coinbase's start is hashed into the midstate", () => {
    const long = coinbase(Uint8Array.of(...encodeBip34Height(926_485n), ...new Uint8Array(40)));
    const compressed = compressCoinbase(long);
    expect(splitCompressedCoinbase(compressed).hashedLength).toBe(64n);
    expect(coinbaseHeight(compressed)).toBeUndefined();
    expect(coinbaseHeight(rskBlock0x1b4().coinbase)).toBeUndefined();
  });

  it("states none for a synthetic coinbase (its scriptSig is an 8-byte extra-nonce)", () => {
    expect(
      coinbaseHeight(compressCoinbase(syntheticCoinbase(new Uint8Array(32), 5n))),
    ).toBeUndefined();
  });

  it("states none for a transaction that is not a coinbase, or bytes that are none", () => {
    const cb = coinbase(encodeBip34Height(500n), 0);
    expect(coinbaseHeight(compressCoinbaseAt(cb, 0))).toBeUndefined();
    expect(coinbaseHeight(new Uint8Array())).toBeUndefined();
    expect(coinbaseHeight(new Uint8Array(41))).toBeUndefined();
    const whole = compressCoinbaseAt(coinbase(encodeBip34Height(500n)), 0);
    expect(coinbaseHeight(whole)).toBe(500n);
    expect(coinbaseHeight(Uint8Array.of(...whole, 0))).toBeUndefined(); // trailing byte
  });

  it("reads the real testnet coinbase once compressed whole", () => {
    const tx = coinbaseWithoutWitness(parseBitcoinBlock(testnetBlock926485().block));
    expect(coinbaseHeight(compressCoinbaseAt(tx, 0))).toBe(926_485n);
  });
});
