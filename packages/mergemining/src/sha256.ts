// SHA-256 written out so that its intermediate state (the "midstate") can be exported after any
// whole number of 64-byte blocks and resumed later: the compressed coinbase of a merged-mining
// proof carries such a state, and the grinding loop hashes only the last 16 header bytes per
// nonce. FIPS 180-4, section 6.2. @noble/hashes keeps its state private; this one is also
// faster here (bench/mergemining), so the package hashes with it throughout.

const K = Uint32Array.of(
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
);

/** The initial state H0..H7. */
export const SHA256_IV: Readonly<Uint32Array> = Uint32Array.of(
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
);

const SCRATCH = new Uint32Array(64);

/**
 * One compression: `state` (8 words) absorbs the message block whose 16 words are already in
 * `w[0..16)`; `w` must have room for 64 words and is overwritten.
 */
export function compressWords(state: Uint32Array, w: Uint32Array): void {
  for (let i = 16; i < 64; i++) {
    const a = w[i - 15]!;
    const b = w[i - 2]!;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
  }
  let a = state[0]!;
  let b = state[1]!;
  let c = state[2]!;
  let d = state[3]!;
  let e = state[4]!;
  let f = state[5]!;
  let g = state[6]!;
  let h = state[7]!;
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (h + S1 + ch + K[i]! + w[i]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0]! + a) | 0;
  state[1] = (state[1]! + b) | 0;
  state[2] = (state[2]! + c) | 0;
  state[3] = (state[3]! + d) | 0;
  state[4] = (state[4]! + e) | 0;
  state[5] = (state[5]! + f) | 0;
  state[6] = (state[6]! + g) | 0;
  state[7] = (state[7]! + h) | 0;
}

/** One compression of the 64 bytes at `data[offset..offset+64)` into `state`. */
export function compressBlock(state: Uint32Array, data: Uint8Array, offset: number): void {
  const w = SCRATCH;
  for (let i = 0; i < 16; i++) {
    const o = offset + 4 * i;
    w[i] = (data[o]! << 24) | (data[o + 1]! << 16) | (data[o + 2]! << 8) | data[o + 3]!;
  }
  compressWords(state, w);
}

/** The state as 32 bytes, H0..H7 big-endian (also the digest, once the message is padded). */
export function stateToBytes(state: Uint32Array): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const v = state[i]!;
    out[4 * i] = v >>> 24;
    out[4 * i + 1] = (v >>> 16) & 0xff;
    out[4 * i + 2] = (v >>> 8) & 0xff;
    out[4 * i + 3] = v & 0xff;
  }
  return out;
}

export function bytesToState(bytes: Uint8Array): Uint32Array {
  if (bytes.length !== 32) throw new RangeError("a SHA-256 state is 32 bytes");
  const s = new Uint32Array(8);
  for (let i = 0; i < 8; i++) {
    s[i] =
      (bytes[4 * i]! << 24) |
      (bytes[4 * i + 1]! << 16) |
      (bytes[4 * i + 2]! << 8) |
      bytes[4 * i + 3]!;
  }
  return s;
}

/**
 * The SHA-256 midstate after hashing `prefix`, whose length must be a multiple of 64:
 * 32 bytes, H0..H7 big-endian.
 */
export function sha256Midstate(prefix: Uint8Array): Uint8Array {
  if (prefix.length % 64 !== 0) {
    throw new RangeError(`a midstate needs whole 64-byte blocks, got ${prefix.length} bytes`);
  }
  const state = Uint32Array.from(SHA256_IV);
  for (let o = 0; o < prefix.length; o += 64) compressBlock(state, prefix, o);
  return stateToBytes(state);
}

/**
 * Finishes a SHA-256 from a midstate: `midstate` is the state after `hashedLength` bytes (a
 * multiple of 64), `tail` the rest of the message. Returns the 32-byte digest of the whole message.
 */
export function sha256FromMidstate(
  midstate: Uint8Array,
  hashedLength: bigint,
  tail: Uint8Array,
): Uint8Array {
  if (hashedLength < 0n || hashedLength % 64n !== 0n) {
    throw new RangeError(
      `hashed length must be a non-negative multiple of 64, got ${hashedLength}`,
    );
  }
  const bits = (hashedLength + BigInt(tail.length)) * 8n;
  if (bits >= 1n << 64n) throw new RangeError("SHA-256 messages are shorter than 2^64 bits");
  return finish(bytesToState(midstate), tail, Number(bits >> 32n), Number(bits & 0xffffffffn));
}

const PAD = new Uint8Array(128);

/** Absorbs `tail`, pads with the 64-bit bit length (hi, lo words) and returns the digest. */
function finish(state: Uint32Array, tail: Uint8Array, bitsHi: number, bitsLo: number): Uint8Array {
  const whole = tail.length - (tail.length % 64);
  for (let o = 0; o < whole; o += 64) compressBlock(state, tail, o);
  const rest = tail.length - whole;
  const n = rest < 56 ? 64 : 128;
  const padded = PAD;
  padded.fill(0, 0, n);
  // Copied byte by byte: a `subarray` of a short array moves it out of V8's heap (a malloc).
  for (let i = 0; i < rest; i++) padded[i] = tail[whole + i]!;
  padded[rest] = 0x80;
  padded[n - 8] = bitsHi >>> 24;
  padded[n - 7] = (bitsHi >>> 16) & 0xff;
  padded[n - 6] = (bitsHi >>> 8) & 0xff;
  padded[n - 5] = bitsHi & 0xff;
  padded[n - 4] = bitsLo >>> 24;
  padded[n - 3] = (bitsLo >>> 16) & 0xff;
  padded[n - 2] = (bitsLo >>> 8) & 0xff;
  padded[n - 1] = bitsLo & 0xff;
  for (let o = 0; o < n; o += 64) compressBlock(state, padded, o);
  return stateToBytes(state);
}

/** SHA-256 of `data`, with this module's compression function. */
export function sha256(data: Uint8Array): Uint8Array {
  const bits = data.length * 8;
  return finish(Uint32Array.from(SHA256_IV), data, Math.floor(bits / 2 ** 32), bits >>> 0);
}

const W2 = new Uint32Array(64);
const ST2 = new Uint32Array(8);

/** SHA-256(SHA-256(m)) of a 64-byte message (a Merkle step): three compressions, no padding buffer. */
export function doubleSha256Of64(m: Uint8Array): Uint8Array {
  if (m.length !== 64) throw new RangeError("want 64 bytes");
  const s = ST2;
  const w = W2;
  s.set(SHA256_IV);
  compressBlock(s, m, 0);
  w.fill(0, 0, 16);
  w[0] = 0x80000000;
  w[15] = 512;
  compressWords(s, w);
  for (let i = 0; i < 8; i++) w[i] = s[i]!;
  w.fill(0, 8, 16);
  w[8] = 0x80000000;
  w[15] = 256;
  s.set(SHA256_IV);
  compressWords(s, w);
  return stateToBytes(s);
}
