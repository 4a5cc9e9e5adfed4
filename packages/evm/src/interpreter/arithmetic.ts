export const MASK = (1n << 256n) - 1n;
const SIGN_BIT = 1n << 255n;
const TWO_256 = 1n << 256n;

/** The word as a two's-complement signed number. */
export function signed(x: bigint): bigint {
  return x >= SIGN_BIT ? x - TWO_256 : x;
}

export function exp(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base & MASK;
  let e = exponent;
  while (e > 0n) {
    if ((e & 1n) === 1n) result = (result * b) & MASK;
    e >>= 1n;
    if (e > 0n) b = (b * b) & MASK;
  }
  return result;
}

/** EXP's dynamic gas counts the exponent's bytes (`expByteGas` each; none for 0). */
export function exponentBytes(exponent: bigint): number {
  return Math.ceil(exponent.toString(2).length / 8);
}
