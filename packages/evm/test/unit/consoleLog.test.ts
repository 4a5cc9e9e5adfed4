import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  hexToBytes,
  keccak256,
  NETWORKS,
  type SignedTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CONSOLE_ADDRESS,
  type ConsoleLine,
  consoleSelectorCount,
  decodeConsoleLog,
  Executor,
} from "../../src/index.js";
import { deployCode, regtestTx } from "./bytecode.js";
import { BLOCK } from "./fixtures.js";

// --- an ABI encoder of its own, independent of the decoder ----------------------------------

type Arg =
  | { type: "uint256" | "uint" | "int256" | "int"; value: bigint }
  | { type: "string"; value: string }
  | { type: "bool"; value: boolean }
  | { type: "address"; value: string }
  | { type: "bytes"; value: string }
  | { type: `bytes${number}`; value: string };

const hex = (n: bigint) => (n < 0n ? 2n ** 256n + n : n).toString(16).padStart(64, "0");

function tail(bytes: Uint8Array): string {
  const padded = Math.ceil(bytes.length / 32) * 32;
  return (
    hex(BigInt(bytes.length)) +
    bytesToHex(bytes)
      .slice(2)
      .padEnd(padded * 2, "0")
  );
}

/** The calldata of `name(types…)` with `args`, as solc encodes it. */
function encode(name: string, args: Arg[]): Uint8Array {
  const signature = `${name}(${args.map((a) => a.type).join(",")})`;
  const selector = bytesToHex(keccak256(new TextEncoder().encode(signature))).slice(2, 10);
  let head = "";
  let tails = "";
  for (const arg of args) {
    switch (arg.type) {
      case "string":
      case "bytes": {
        head += hex(BigInt(args.length * 32 + tails.length / 2));
        tails += tail(
          arg.type === "string" ? new TextEncoder().encode(arg.value) : hexToBytes(arg.value),
        );
        break;
      }
      case "bool":
        head += hex(arg.value ? 1n : 0n);
        break;
      case "address":
        head += arg.value.slice(2).padStart(64, "0");
        break;
      case "uint256":
      case "uint":
      case "int256":
      case "int":
        head += hex(arg.value);
        break;
      default:
        head += arg.value.slice(2).padEnd(64, "0");
    }
  }
  return hexToBytes(`0x${selector}${head}${tails}`);
}

const u = (value: bigint): Arg => ({ type: "uint256", value });
const s = (value: string): Arg => ({ type: "string", value });
const b = (value: boolean): Arg => ({ type: "bool", value });
const a = (value: string): Arg => ({ type: "address", value });

const message = (text: string): ConsoleLine => ({ kind: "message", text });
const ADDR = "0x5fbdb2315678afecb367f032d93f642f64180aa3";

describe("decodeConsoleLog", () => {
  it("knows every function of console.sol, and the selectors of uint and int", () => {
    // log(), 6 logX, 32 logBytesN, 6 log(T), 4²+4³+4⁴ log of 2–4 of {uint256,string,bool,address};
    // then again with uint/int for each signature naming uint256/int256.
    const current = 1 + 6 + 32 + 6 + 16 + 64 + 256;
    const withUint = 4 + (16 - 9) + (64 - 27) + (256 - 81);
    expect(consoleSelectorCount()).toBe(current + withUint);
  });

  it("decodes each type", () => {
    expect(decodeConsoleLog(encode("log", []))).toEqual(message(""));
    expect(decodeConsoleLog(encode("logUint", [u(42n)]))).toEqual(message("42"));
    expect(decodeConsoleLog(encode("logInt", [{ type: "int256", value: -7n }]))).toEqual(
      message("-7"),
    );
    expect(decodeConsoleLog(encode("log", [{ type: "int256", value: -(2n ** 255n) }]))).toEqual(
      message((-(2n ** 255n)).toString()),
    );
    expect(decodeConsoleLog(encode("log", [u(2n ** 256n - 1n)]))).toEqual(
      message((2n ** 256n - 1n).toString()),
    );
    expect(decodeConsoleLog(encode("logString", [s("héllo")]))).toEqual(message("héllo"));
    expect(decodeConsoleLog(encode("log", [s("")]))).toEqual(message(""));
    expect(decodeConsoleLog(encode("logBool", [b(true)]))).toEqual(message("true"));
    expect(decodeConsoleLog(encode("log", [b(false)]))).toEqual(message("false"));
    expect(decodeConsoleLog(encode("logAddress", [a(ADDR)]))).toEqual(message(ADDR));
    expect(
      decodeConsoleLog(encode("logBytes", [{ type: "bytes", value: `0x${"ab".repeat(40)}` }])),
    ).toEqual(message(`0x${"ab".repeat(40)}`));
    expect(decodeConsoleLog(encode("log", [{ type: "bytes", value: "0x" }]))).toEqual(
      message("0x"),
    );
    for (let n = 1; n <= 32; n++) {
      const value = `0x${"7f".repeat(n)}`;
      expect(decodeConsoleLog(encode(`logBytes${n}`, [{ type: `bytes${n}`, value }]))).toEqual(
        message(value),
      );
    }
  });

  it("decodes the selectors computed with uint and int", () => {
    expect(decodeConsoleLog(encode("log", [{ type: "uint", value: 5n }]))).toEqual(message("5"));
    expect(decodeConsoleLog(encode("logInt", [{ type: "int", value: -5n }]))).toEqual(
      message("-5"),
    );
    expect(decodeConsoleLog(encode("log", [s("a"), { type: "uint", value: 1n }, b(true)]))).toEqual(
      message("a 1 true"),
    );
  });

  it("decodes every combination of two to four arguments", () => {
    const samples = [u(7n), s("x y"), b(true), a(ADDR)];
    const texts = ["7", "x y", "true", ADDR];
    let combos: number[][] = [[]];
    for (let arity = 1; arity <= 4; arity++) {
      combos = combos.flatMap((prefix) => [0, 1, 2, 3].map((i) => [...prefix, i]));
      if (arity < 2) continue;
      for (const combo of combos) {
        const line = decodeConsoleLog(
          encode(
            "log",
            combo.map((i) => samples[i]!),
          ),
        );
        expect(line).toEqual(message(combo.map((i) => texts[i]).join(" ")));
      }
    }
  });

  it("formats with the first argument as util.format's format string", () => {
    expect(decodeConsoleLog(encode("log", [s("from %s to %s"), a(ADDR), a(ADDR)]))).toEqual(
      message(`from ${ADDR} to ${ADDR}`),
    );
    // %d and %i print the whole number, past 2⁵³
    expect(decodeConsoleLog(encode("log", [s("n=%d i=%i"), u(2n ** 200n), u(3n)]))).toEqual(
      message(`n=${2n ** 200n} i=3`),
    );
    // an escaped %% stays a %; %%d is not a placeholder
    expect(decodeConsoleLog(encode("log", [s("100%% %%d %d"), u(9n)]))).toEqual(
      message("100% %d 9"),
    );
    // %o inspects the text; placeholders without arguments stay; extra arguments follow
    expect(decodeConsoleLog(encode("log", [s("%o"), s("q")]))).toEqual(message("'q'"));
    expect(decodeConsoleLog(encode("log", [s("%s and %s"), u(1n)]))).toEqual(message("1 and %s"));
    expect(decodeConsoleLog(encode("log", [s("a"), u(1n), b(false), s("%s")]))).toEqual(
      message("a 1 false %s"),
    );
    // a first argument that is not a string is text too (as Hardhat formats it)
    expect(decodeConsoleLog(encode("log", [u(1n), s("%s")]))).toEqual(message("1 %s"));
  });

  it("answers a note, never throws, for data that does not decode", () => {
    const sel = (name: string, arg: Arg) => bytesToHex(encode(name, [arg]).subarray(0, 4)).slice(2);
    const str = sel("logString", s(""));
    const notes = [
      new Uint8Array(),
      hexToBytes("0x1234"),
      hexToBytes("0xdeadbeef"),
      // logUint with a short word
      encode("logUint", [u(1n)]).subarray(0, 20),
      // a string whose offset points past the data
      hexToBytes(`0x${str}${hex(2n ** 255n)}`),
      hexToBytes(`0x${str}${hex(64n)}`),
      // a string longer than the data
      hexToBytes(`0x${str}${hex(32n)}${hex(1000n)}${"61".repeat(32)}`),
      // a bool of 2, an address of more than 20 bytes, a bytes4 with bytes past its fourth
      hexToBytes(`0x${sel("logBool", b(true))}${hex(2n)}`),
      hexToBytes(`0x${sel("logAddress", a(ADDR))}${"ff".repeat(32)}`),
      hexToBytes(`0x${sel("logBytes4", { type: "bytes4", value: "0x01" })}${"ff".repeat(32)}`),
    ];
    for (const data of notes) {
      const line = decodeConsoleLog(data);
      expect(line.kind, bytesToHex(data)).toBe("note");
      expect(line.text).toMatch(/console\.log/);
    }
    // random bytes after every known selector: a message or a note, nothing thrown
    for (let i = 0; i < 2000; i++) {
      const data = new Uint8Array(4 + Math.floor(Math.random() * 200));
      for (let j = 0; j < data.length; j++) data[j] = Math.floor(Math.random() * 256);
      if (i % 2 === 0) data.set(encode("log", [s("x"), u(1n), s("y")]).subarray(0, 4));
      expect(["message", "note"]).toContain(decodeConsoleLog(data).kind);
    }
  });
});

// --- the executor's two paths ------------------------------------------------------------------

const [alice] = deriveDevAccounts();
const CONSOLE = hexToBytes(CONSOLE_ADDRESS);
/** An address that is not the console's and has nothing, as the console's has nothing. */
const EMPTY_ACCOUNT = hexToBytes("0x000000000000000000636f6e736f6c652e6c6f68");

/**
 * Runtime (or init code) that sends its calldata (or the bytes after it, for init code) to
 * `target` with STATICCALL, twice, then stops, or reverts when `revert`.
 */
function caller(target: Uint8Array, revert = false): number[] {
  const call = [
    0x5f, // retSize
    0x5f, // retOffset
    0x36, // CALLDATASIZE: argsSize
    0x5f, // argsOffset
    0x73,
    ...target, // PUSH20 target
    0x5a, // GAS
    0xfa, // STATICCALL
    0x50, // POP
  ];
  return [
    0x36,
    0x5f,
    0x5f,
    0x37, // calldatacopy(0, 0, calldatasize)
    ...call,
    ...call,
    ...(revert ? [0x5f, 0x5f, 0xfd] : [0x00]),
  ];
}

let dir: string;
let db: Database;
let state: WorldState;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-console-"));
  db = await Database.open(join(dir, "db"));
  state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice!.address, 10n ** 20n);
  await state.commit();
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

function tx(fields: Partial<UnsignedTransaction>, nonce: bigint) {
  return regtestTx(fields, nonce, alice!.privateKey, 1_000_000n);
}

interface Heard {
  readonly lines: readonly ConsoleLine[];
  readonly tx: SignedTransaction | undefined;
}

function executors() {
  const heard: Heard[] = [];
  const consoleLog = (lines: readonly ConsoleLine[], t: SignedTransaction | undefined) => {
    heard.push({ lines, tx: t });
  };
  return {
    heard,
    interpreter: new Executor(NETWORKS.regtest, { consoleLog }),
    library: new Executor(NETWORKS.regtest, {
      consoleLog,
      libraryCalls: true,
      libraryTransactions: true,
    }),
    silent: new Executor(NETWORKS.regtest),
  };
}

describe("Executor with consoleLog", () => {
  it("tells the lines of transactions and calls, on the interpreter and on the library, at the cost of calls to an empty account", async () => {
    const { heard, interpreter, library, silent } = executors();
    const setup = [
      tx({ data: deployCode(Uint8Array.from(caller(CONSOLE))) }, 0n),
      tx({ data: deployCode(Uint8Array.from(caller(EMPTY_ACCOUNT))) }, 1n),
      tx({ data: deployCode(Uint8Array.from(caller(CONSOLE, true))) }, 2n),
    ];
    for (const t of setup)
      expect((await silent.executeTransaction(state, t, BLOCK, 0n)).status).toBe(1);
    const logging = contractAddress(alice!.address, 0n);
    const plain = contractAddress(alice!.address, 1n);
    const reverting = contractAddress(alice!.address, 2n);
    const data = encode("log", [s("value %d of %s"), u(12n), a(ADDR)]);
    const line = message(`value 12 of ${ADDR}`);

    let nonce = 3n;
    for (const executor of [interpreter, library]) {
      heard.length = 0;
      const sent = tx({ to: logging, data }, nonce++);
      const out = await executor.executeTransaction(state, sent, BLOCK, 0n);
      expect(out.status).toBe(1);
      expect(heard).toEqual([{ lines: [line, line], tx: sent }]);
      const other = await executor.executeTransaction(
        state,
        tx({ to: plain, data }, nonce++),
        BLOCK,
        0n,
      );
      expect(out.gasUsed).toBe(other.gasUsed);
      expect(heard).toHaveLength(1);

      // a transaction that reverts after its calls: told too, as Hardhat prints them
      heard.length = 0;
      const failing = tx({ to: reverting, data }, nonce++);
      expect((await executor.executeTransaction(state, failing, BLOCK, 0n)).status).toBe(0);
      expect(heard).toEqual([{ lines: [line, line], tx: failing }]);

      // calls: told, but not for estimate probes nor when asked not to
      heard.length = 0;
      const called = await executor.call(state, { from: alice!.address, to: logging, data }, BLOCK);
      expect(called.success).toBe(true);
      expect(heard).toEqual([{ lines: [line, line], tx: undefined }]);
      const plainCall = await silent.call(state, { from: alice!.address, to: plain, data }, BLOCK);
      expect(called.gasUsed).toBe(plainCall.gasUsed);
      heard.length = 0;
      await executor.call(state, { to: logging, data }, BLOCK, { probe: true });
      await executor.call(state, { to: logging, data }, BLOCK, { consoleLog: false });
      expect(heard).toEqual([]);

      // a call straight to the console address
      await executor.call(state, { to: CONSOLE as Address, data }, BLOCK);
      expect(heard).toEqual([{ lines: [line], tx: undefined }]);
    }
  });

  it("tells lines of a creation's init code, and none under a tracer", async () => {
    const { heard, interpreter } = executors();
    const data = encode("logString", [s("constructing")]);
    // Init code runs with no calldata: it calls with its own code's tail, copied by CODECOPY.
    const init = [
      0x60,
      data.length, // PUSH1 size
      0x80, // DUP1
      0x60,
      0, // PUSH1 offset of the data in the code (patched below)
      0x5f,
      0x39, // codecopy(0, offset, size)
      0x5f, // retSize
      0x5f, // retOffset
      0x82, // DUP3: argsSize
      0x5f, // argsOffset
      0x73,
      ...CONSOLE,
      0x5a,
      0xfa,
      0x00,
    ];
    init[4] = init.length;
    const sent = tx({ data: Uint8Array.from([...init, ...data]) }, 0n);
    const out = await interpreter.executeTransaction(state, sent, BLOCK, 0n);
    expect(out.status).toBe(1);
    expect(heard).toEqual([{ lines: [message("constructing")], tx: sent }]);

    heard.length = 0;
    const replay = await interpreter.executeTransaction(
      state,
      tx({ data: sent.data }, 1n),
      BLOCK,
      0n,
      {},
    );
    expect(replay.status).toBe(1);
    expect(heard).toEqual([]);
  });

  it("tells notes for calls that do not decode, and a failing sink changes nothing", async () => {
    const throwing = new Executor(NETWORKS.regtest, {
      consoleLog: () => {
        throw new Error("sink failed");
      },
    });
    const heard: ConsoleLine[][] = [];
    const noting = new Executor(NETWORKS.regtest, {
      consoleLog: (lines) => {
        heard.push([...lines]);
      },
    });
    await noting.executeTransaction(
      state,
      tx({ data: deployCode(Uint8Array.from(caller(CONSOLE))) }, 0n),
      BLOCK,
      0n,
    );
    const to = contractAddress(alice!.address, 0n);
    const bad = hexToBytes("0x41304fac00");
    const out = await throwing.call(state, { to, data: bad }, BLOCK);
    expect(out.success).toBe(true);
    await noting.call(state, { to, data: bad }, BLOCK);
    expect(heard).toHaveLength(1);
    expect(heard[0]!.map((l) => l.kind)).toEqual(["note", "note"]);
  });
});
