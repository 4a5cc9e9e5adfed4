import { EVMError } from "@ethereumjs/evm";
import { keccak256 } from "@nodex/types";
import { exponentBytes } from "./interpreter/arithmetic.js";
import { GAS_PARAMS } from "./interpreter/gas.js";
import { Op } from "./interpreter/opcodes.js";
import { type AccessCosts, sloadGas } from "./interpreter/storage.js";
import { bytesValue, wordBytes } from "./words.js";

/**
 * Opcode and gas handlers put in an EVM's opcode table in place of `@ethereumjs/evm`'s, with the
 * same effects, the same gas and the same errors, for the rules the node runs (no verkle or
 * binary-tree EIPs, EIP-2929 access lists).
 *
 * The library's gas handlers are `async` functions, though none of the ones replaced here waits
 * for anything: each returns a promise that the step loop (`fastSteps.ts`) must await, one
 * turn of the microtask queue per memory access, hash or storage read. These return the gas.
 * Its opcode handlers go between integers and bytes through hex strings (`bytesToBigInt`,
 * `bigIntToBytes`); these read and write the words directly.
 *
 * The fast-steps test runs random programs of these opcodes against the library's own
 * handlers (a traced run keeps them) and compares gas, status, output, logs and state.
 */

/** What these handlers read of the interpreter's run state. */
interface RunState {
  programCounter: number;
  opCode: number;
  code: Uint8Array;
  cachedPushes: Record<number, bigint>;
  shouldDoJumpAnalysis: boolean;
  memoryWordCount: bigint;
  highestMemCost: bigint;
  readonly stack: {
    push(value: bigint): void;
    pop(): bigint;
    popN(n: number): bigint[];
    peek(n?: number): bigint[];
  };
  readonly memory: {
    read(offset: number, size: number, avoidCopy?: boolean): Uint8Array;
    write(offset: number, size: number, value: Uint8Array): void;
  };
  readonly interpreter: {
    getAddress(): { readonly bytes: Uint8Array };
    getCallData(): Uint8Array;
    isStatic(): boolean;
    storageLoad(key: Uint8Array): Promise<Uint8Array>;
    readonly journal: {
      isWarmedStorage(address: Uint8Array, slot: Uint8Array): boolean;
      addWarmedStorage(address: Uint8Array, slot: Uint8Array): void;
    };
  };
}

interface CommonLike {
  isActivatedEIP(eip: number): boolean;
  param(name: string): bigint;
  readonly customCrypto?: { readonly keccak256?: (data: Uint8Array) => Uint8Array };
}

interface OpcodeEntry {
  readonly opcodeInfo: { readonly code: number; readonly dynamicGas: boolean };
  opHandler: (runState: RunState, common: CommonLike) => unknown;
  gasHandler?: (runState: RunState, gas: bigint, common: CommonLike) => bigint | Promise<bigint>;
}

/** MSTORE: the word into 32 bytes of memory. */
export function fastMstore(runState: RunState): void {
  const [offset, word] = runState.stack.popN(2) as [bigint, bigint];
  runState.memory.write(Number(offset), 32, wordBytes(word));
}

/** `a / b` rounded up, for the non-negative operands of gas (the library's `divCeil`). */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b === 0n ? q : q + 1n;
}

function trap(message: string): never {
  throw new EVMError(message as never);
}

/**
 * Puts the fast handlers in `evm`'s opcode table (each EVM has its own, rebuilt when its
 * hardfork changes, which puts the library's back). Nothing is replaced under the verkle or
 * binary-tree EIPs, and storage reads only with EIP-2929.
 */
export function installFastOpcodes(evm: object, stop: (runState: never) => void): void {
  const internals = evm as {
    _opcodeMap?: (OpcodeEntry | undefined)[];
    readonly common?: CommonLike;
  };
  const map = internals._opcodeMap;
  const common = internals.common;
  if (map === undefined || common === undefined) return;
  const entry = (op: number, dynamic?: boolean): OpcodeEntry | undefined => {
    const e = map[op];
    if (e === undefined || e.opcodeInfo.code !== op) return undefined;
    if (dynamic !== undefined && e.opcodeInfo.dynamicGas !== dynamic) return undefined;
    return e;
  };
  const setOp = (op: number, handler: OpcodeEntry["opHandler"]) => {
    const e = entry(op);
    if (e !== undefined) e.opHandler = handler;
  };
  const setGas = (op: number, handler: NonNullable<OpcodeEntry["gasHandler"]>) => {
    const e = entry(op, true);
    if (e?.gasHandler !== undefined) e.gasHandler = handler;
  };

  setOp(Op.MSTORE, fastMstore as never);
  setOp(Op.STOP, stop as never);
  if (common.isActivatedEIP(6800) || common.isActivatedEIP(7864)) return;

  const memoryGas = common.param(GAS_PARAMS.memory);
  const quadCoefficient = common.param(GAS_PARAMS.quadDiv);
  const keccakWordGas = common.param(GAS_PARAMS.keccakWord);
  const copyGas = common.param(GAS_PARAMS.copy);
  const logTopicGas = common.param(GAS_PARAMS.logTopic);
  const logDataGas = common.param(GAS_PARAMS.logData);
  const expByteGas = common.param(GAS_PARAMS.expByte);

  /** The gas of growing memory to cover `length` bytes at `offset` (the library's `subMemUsage`). */
  const memory = (rs: RunState, offset: bigint, length: bigint): bigint => {
    if (length === 0n) return 0n;
    const words = divCeil(offset + length, 32n);
    if (words <= rs.memoryWordCount) return 0n;
    let cost = words * memoryGas + (words * words) / quadCoefficient;
    if (cost > rs.highestMemCost) {
      const highest = rs.highestMemCost;
      rs.highestMemCost = cost;
      cost -= highest;
    }
    rs.memoryWordCount = words;
    return cost;
  };

  // --- gas ---------------------------------------------------------------------------------
  setGas(Op.EXP, (rs, gas) => {
    const exponent = rs.stack.peek(2)[1]!;
    if (exponent === 0n) return gas;
    const bytes = exponentBytes(exponent);
    if (bytes < 1 || bytes > 32) trap(EVMError.errorMessages.OUT_OF_RANGE);
    return gas + BigInt(bytes) * expByteGas;
  });
  setGas(Op.KECCAK256, (rs, gas) => {
    const [offset, length] = rs.stack.peek(2) as [bigint, bigint];
    return gas + memory(rs, offset, length) + keccakWordGas * divCeil(length, 32n);
  });
  const copy = (rs: RunState, gas: bigint): bigint => {
    const [memOffset, , length] = rs.stack.peek(3) as [bigint, bigint, bigint];
    gas += memory(rs, memOffset, length);
    return length === 0n ? gas : gas + copyGas * divCeil(length, 32n);
  };
  setGas(Op.CALLDATACOPY, copy);
  setGas(Op.CODECOPY, copy);
  setGas(Op.MLOAD, (rs, gas) => gas + memory(rs, rs.stack.peek()[0]!, 32n));
  setGas(Op.MSTORE, (rs, gas) => gas + memory(rs, rs.stack.peek()[0]!, 32n));
  setGas(Op.MSTORE8, (rs, gas) => gas + memory(rs, rs.stack.peek()[0]!, 1n));
  setGas(Op.MCOPY, (rs, gas) => {
    const [dst, src, length] = rs.stack.peek(3) as [bigint, bigint, bigint];
    gas += 3n * ((length + 31n) / 32n);
    gas += memory(rs, src, length);
    return gas + memory(rs, dst, length);
  });
  for (let op: number = Op.LOG0; op <= Op.LOG4; op++) {
    setGas(op, (rs, gas) => {
      if (rs.interpreter.isStatic()) trap(EVMError.errorMessages.STATIC_STATE_CHANGE);
      const [offset, length] = rs.stack.peek(2) as [bigint, bigint];
      const topics = rs.opCode - Op.LOG0;
      if (topics < 0 || topics > 4) trap(EVMError.errorMessages.OUT_OF_RANGE);
      gas += memory(rs, offset, length);
      return gas + logTopicGas * BigInt(topics) + length * logDataGas;
    });
  }
  const returning = (rs: RunState, gas: bigint): bigint => {
    const [offset, length] = rs.stack.peek(2) as [bigint, bigint];
    return gas + memory(rs, offset, length);
  };
  setGas(Op.RETURN, returning);
  setGas(Op.REVERT, returning);
  if (common.isActivatedEIP(2929)) {
    const costs: AccessCosts<bigint> = {
      coldSload: common.param(GAS_PARAMS.coldSload),
      warmRead: common.param(GAS_PARAMS.warmRead),
    };
    setGas(Op.SLOAD, (rs, gas) => {
      const slot = wordBytes(rs.stack.peek()[0]!);
      const address = rs.interpreter.getAddress().bytes;
      const journal = rs.interpreter.journal;
      const cold = !journal.isWarmedStorage(address, slot);
      if (cold) journal.addWarmedStorage(address, slot);
      return gas + sloadGas(cold, costs);
    });
  }

  // --- opcodes -----------------------------------------------------------------------------
  setOp(Op.KECCAK256, (rs, c) => {
    const [offset, length] = rs.stack.popN(2) as [bigint, bigint];
    const data = length === 0n ? new Uint8Array(0) : rs.memory.read(Number(offset), Number(length));
    // The Common's hash (the node's keccak256) when it has one, as the library picks it.
    rs.stack.push(bytesValue((c.customCrypto?.keccak256 ?? keccak256)(data)));
  });
  setOp(Op.CALLDATALOAD, (rs) => {
    const position = rs.stack.pop();
    const data = rs.interpreter.getCallData();
    if (position >= BigInt(data.length)) {
      rs.stack.push(0n);
      return;
    }
    const at = Number(position);
    const word = new Uint8Array(32);
    word.set(data.subarray(at, at + 32));
    rs.stack.push(bytesValue(word));
  });
  setOp(Op.MLOAD, (rs) => {
    const position = rs.stack.pop();
    rs.stack.push(bytesValue(rs.memory.read(Number(position), 32, true)));
  });
  setOp(Op.SLOAD, async (rs) => {
    const value = await rs.interpreter.storageLoad(wordBytes(rs.stack.pop()));
    rs.stack.push(value.length === 0 ? 0n : bytesValue(value));
  });
  const push = (rs: RunState) => {
    const n = rs.opCode - Op.PUSH0;
    if (!rs.shouldDoJumpAnalysis) {
      rs.stack.push(rs.cachedPushes[rs.programCounter]!);
      rs.programCounter += n;
      return;
    }
    // Before the first jump: the bytes after the opcode, zeros past the end of the code.
    const bytes = new Uint8Array(n);
    bytes.set(rs.code.subarray(rs.programCounter, rs.programCounter + n));
    rs.programCounter += n;
    rs.stack.push(bytesValue(bytes));
  };
  for (let op: number = Op.PUSH1; op <= Op.PUSH32; op++) setOp(op, push);
}
