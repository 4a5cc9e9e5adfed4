import { readFileSync } from "node:fs";
import { AbiCoder, getAddress, keccak256, toBeHex } from "ethers";
import { deployCode } from "./bytecode.js";
import { send } from "./node.js";

// A devnet chain with a large state, made over JSON-RPC on a running node: empty blocks, then a
// few blocks at the head that carry the state (many accounts, a few contracts with thousands of
// storage slots each). Everything is deterministic (one sender, explicit nonces, gas price 0,
// every block's time set), so two builds with the same options end with the same head hash and
// state root.
//
// One contract (the filler, below) does the bulk of the work in a few large transactions: one
// call pays a thousand new accounts, another writes two thousand new slots of its own storage.
// The blocks that carry them get a large gas limit (devnet takes any, `evm_setBlockGasLimit`);
// the empty blocks keep the node's own.

export interface BigChainOptions {
  /** The head's number at the end (at least the blocks that carry the state: a few). */
  readonly blocks: number;
  /** New accounts, each paid a few wei by the first contract. */
  readonly accounts: number;
  /** New storage slots written in each contract. */
  readonly slots: number;
  /** Contracts with `slots` slots each (1 by default); the first also pays the accounts. */
  readonly contracts?: number;
  /**
   * Empty blocks after those that carry the state (0 by default), so that the state is older
   * than the head: a snapshot sync's pivot, some blocks below the head, then has all of it.
   */
  readonly emptyAfter?: number;
}

/**
 * The large chain the end-to-end tests share (built once per code version, see
 * `bigChainDatadir`): 5,000 blocks, 50,000 accounts, two contracts of 5,000 slots, and 150
 * empty blocks after the state, so that a pivot 64 blocks below the head holds all of it.
 */
export const LARGE_CHAIN: BigChainOptions = Object.freeze({
  blocks: 5_000,
  accounts: 50_000,
  slots: 5_000,
  contracts: 2,
  emptyAfter: 150,
});

export interface SampleAccount {
  readonly address: string;
  readonly balance: bigint;
}

export interface SampleSlot {
  readonly address: string;
  /** The slot, as 32 bytes in hex. */
  readonly slot: string;
  readonly value: bigint;
}

/** Seconds each part of a build took. */
export interface BigChainPhases {
  readonly deploy: number;
  readonly accounts: number;
  readonly slots: number;
  readonly emptyBlocks: number;
  readonly emptyAfter: number;
  readonly check: number;
  readonly total: number;
}

export interface BigChain {
  readonly head: bigint;
  readonly headHash: string;
  readonly stateRoot: string;
  readonly accountsCreated: number;
  readonly slotsWritten: number;
  /** The contracts holding the slots (checksummed), the first of which paid the accounts. */
  readonly contracts: readonly string[];
  /** The first block with transactions: the blocks before it are empty, and those from it to the head carry the state. */
  readonly firstStateBlock: bigint;
  readonly sampleAccounts: readonly SampleAccount[];
  readonly sampleSlots: readonly SampleSlot[];
  /** Wall-clock seconds of each part, from the caller's side. */
  readonly seconds: BigChainPhases;
  /**
   * CPU seconds the node's process used in each part (user and system, from /proc), when the
   * target is a running node on Linux: the figure that other processes on the machine move least.
   */
  readonly cpuSeconds: BigChainPhases | undefined;
}

/** Where the builder's work goes: a node's JSON-RPC URL, or a started node. */
export type BigChainTarget =
  | string
  | { readonly url: string; readonly process?: { readonly pid?: number | undefined } };

/** The sender of every transaction: devnet's first development account (unlocked). */
export const BIG_CHAIN_SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
/** Time of block 1 (2023-11-14); block n is at this plus n − 1 seconds. */
export const BIG_CHAIN_FIRST_TIME = 1_700_000_000;
/** Gas limit of the blocks that carry the state (the empty ones keep the node's). */
export const STATE_BLOCK_GAS_LIMIT = 1_000_000_000n;
/** Accounts paid by one transaction, and slots written by one (about 37 and 45 Mgas). */
export const ACCOUNTS_PER_TX = 1_000;
export const SLOTS_PER_TX = 2_000;
/** Gas of each kind of call: a little above what one uses (36,700 per account, 22,200 per slot). */
const GAS_PER_ACCOUNT = 37_000n;
const GAS_PER_SLOT = 22_500n;
const GAS_BASE = 100_000n;
/** The pool keeps at most 64 waiting transactions per sender: each block takes fewer. */
const MAX_TXS_PER_BLOCK = 60;
/** evm_mine requests per JSON-RPC batch (the node's default batch limit is 1,000). */
const MINE_BATCH = 1_000;
/** Samples returned (and checked) of each kind. */
const SAMPLES = 8;

// ---------------------------------------------------------------------------------------------
// The filler contract, assembled here (no compiler): calldata is three words, mode, start, count.
//   mode 0: for i in [start, start + count): CALL keccak256(i)[12:] with value i + 1 (and no gas
//           but the stipend); reverts if one fails. The call's value pays them all.
//   mode 1: for i in [start, start + count): SSTORE(keccak256(i ‖ ADDRESS), i + 1); the address
//           in the key keeps the storage of two fillers apart (no shared trie nodes).

type Asm = string | number | { readonly push: bigint; readonly bytes: number } | { label: string };

const OPS: Record<string, number> = {
  STOP: 0x00,
  ADD: 0x01,
  LT: 0x10,
  ISZERO: 0x15,
  AND: 0x16,
  KECCAK256: 0x20,
  ADDRESS: 0x30,
  CALLDATALOAD: 0x35,
  MSTORE: 0x52,
  SSTORE: 0x55,
  JUMP: 0x56,
  JUMPI: 0x57,
  JUMPDEST: 0x5b,
  DUP1: 0x80,
  DUP2: 0x81,
  DUP3: 0x82,
  DUP6: 0x85,
  SWAP1: 0x90,
  CALL: 0xf1,
  REVERT: 0xfd,
};

/**
 * A two-pass assembler: an opcode name, a small number (PUSH1), `{push, bytes}`, `{label}` (a
 * JUMPDEST there), or `@label` (PUSH2 of that label's offset).
 */
function assemble(program: readonly Asm[]): string {
  const size = (item: Asm) =>
    typeof item === "number"
      ? 2
      : typeof item === "string"
        ? item.startsWith("@")
          ? 3
          : 1
        : "push" in item
          ? 1 + item.bytes
          : 1;
  const labels = new Map<string, number>();
  let at = 0;
  for (const item of program) {
    if (typeof item === "object" && "label" in item) labels.set(item.label, at);
    at += size(item);
  }
  const hex = (n: bigint | number, bytes: number) => n.toString(16).padStart(bytes * 2, "0");
  let out = "";
  for (const item of program) {
    if (typeof item === "number") out += `60${hex(item, 1)}`;
    else if (typeof item === "string" && item.startsWith("@")) {
      const target = labels.get(item.slice(1));
      if (target === undefined) throw new Error(`no label ${item}`);
      out += `61${hex(target, 2)}`;
    } else if (typeof item === "string") {
      const op = OPS[item];
      if (op === undefined) throw new Error(`unknown opcode ${item}`);
      out += hex(op, 1);
    } else if ("push" in item) out += hex(0x5f + item.bytes, 1) + hex(item.push, item.bytes);
    else out += hex(OPS.JUMPDEST!, 1);
  }
  return `0x${out}`;
}

const ADDRESS_MASK = { push: (1n << 160n) - 1n, bytes: 20 };

/** Stack comments list the top first. */
export const FILLER_RUNTIME = assemble([
  0x20,
  "CALLDATALOAD", // [start]
  "DUP1",
  0x40,
  "CALLDATALOAD", // [count, i, i]
  "ADD", // [end, i]
  0x00,
  "CALLDATALOAD", // [mode, end, i]
  "@store",
  "JUMPI", // [end, i]
  { label: "pay" },
  "DUP1",
  "DUP3",
  "LT",
  "ISZERO",
  "@done",
  "JUMPI", // [end, i] while i < end
  "DUP2",
  0x00,
  "MSTORE", // memory[0..32] = i
  0x00,
  0x00,
  0x00,
  0x00, // [retSize, retOffset, argsSize, argsOffset, end, i]
  "DUP6",
  0x01,
  "ADD", // [value = i + 1, …]
  0x20,
  0x00,
  "KECCAK256",
  ADDRESS_MASK,
  "AND", // [to = keccak256(i)[12:], value, …]
  0x00, // [gas 0: the stipend, to, value, 0, 0, 0, 0, end, i]
  "CALL",
  "ISZERO",
  "@fail",
  "JUMPI", // [end, i]
  "SWAP1",
  0x01,
  "ADD",
  "SWAP1", // [end, i + 1]
  "@pay",
  "JUMP",
  { label: "store" },
  "ADDRESS",
  0x20,
  "MSTORE", // memory[32..64] = this address
  { label: "storeLoop" },
  "DUP1",
  "DUP3",
  "LT",
  "ISZERO",
  "@done",
  "JUMPI", // [end, i] while i < end
  "DUP2",
  0x00,
  "MSTORE", // memory[0..32] = i
  "DUP2",
  0x01,
  "ADD", // [i + 1, end, i]
  0x40,
  0x00,
  "KECCAK256", // [keccak256(i ‖ address), i + 1, end, i]
  "SSTORE", // [end, i]
  "SWAP1",
  0x01,
  "ADD",
  "SWAP1", // [end, i + 1]
  "@storeLoop",
  "JUMP",
  { label: "done" },
  "STOP",
  { label: "fail" },
  0x00,
  "DUP1",
  "REVERT",
]);

const abi = AbiCoder.defaultAbiCoder();
const fillerCall = (mode: 0 | 1, start: number, count: number) =>
  abi.encode(["uint256", "uint256", "uint256"], [mode, start, count]);

/** The account the filler pays for index `i`, and what it pays. */
export function filledAccount(i: number): SampleAccount {
  return {
    address: getAddress(`0x${keccak256(toBeHex(i, 32)).slice(26)}`),
    balance: BigInt(i) + 1n,
  };
}

/** The slot a filler at `contract` writes for index `i`, and its value. */
export function filledSlot(contract: string, i: number): SampleSlot {
  const slot = keccak256(`${toBeHex(i, 32)}${toBeHex(BigInt(contract), 32).slice(2)}`);
  return { address: getAddress(contract), slot, value: BigInt(i) + 1n };
}

/** The address of the contract `sender` deploys with `nonce`. */
function createdAddress(sender: string, nonce: number): string {
  const rlpNonce = nonce === 0 ? "80" : nonce < 0x80 ? toBeHex(nonce).slice(2) : undefined;
  if (rlpNonce === undefined) throw new Error(`nonce ${nonce}: only nonces below 128 here`);
  return getAddress(`0x${keccak256(`0xd694${sender.slice(2)}${rlpNonce}`).slice(26)}`);
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC

interface Answer {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: { readonly code: number; readonly message: string };
}

/** Sends `calls` as one batch; returns the results in order, or throws with the first error. */
async function batch(url: string, calls: readonly (readonly [string, unknown[]])[]) {
  if (calls.length === 0) return [];
  const res = await send(
    url,
    calls.map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params })),
  );
  if (res.status !== 200 || !Array.isArray(res.json))
    throw new Error(
      `batch of ${calls.length} answered HTTP ${res.status}: ${res.text.slice(0, 300)}`,
    );
  const answers = res.json as Answer[];
  if (answers.length !== calls.length)
    throw new Error(`batch of ${calls.length} answered ${answers.length} responses`);
  const out: unknown[] = [];
  for (const a of answers) {
    if (a.error !== undefined)
      throw new Error(`${calls[a.id]?.[0]} answered ${a.error.code} ${a.error.message}`);
    out[a.id] = a.result;
  }
  return out;
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  return (await batch(url, [[method, params]]))[0];
}

interface Block {
  readonly number: string;
  readonly hash: string;
  readonly stateRoot: string;
  readonly gasLimit: string;
  readonly transactions: readonly string[];
}

const quantity = (n: number | bigint) => `0x${n.toString(16)}`;

// ---------------------------------------------------------------------------------------------
// The build

/** One transaction of a block: a call of the filler or a deployment. */
interface Work {
  readonly to?: string;
  readonly data: string;
  readonly value: bigint;
  readonly gas: bigint;
}

class Builder {
  readonly #url: string;
  #nonce = 0;
  #next = 1n;

  constructor(url: string) {
    this.#url = url;
  }

  get nextBlock(): bigint {
    return this.#next;
  }

  /**
   * One block of these transactions, sent from the sender with explicit nonces, at its fixed
   * time; checks that the block holds them all and that each succeeded.
   */
  async block(works: readonly Work[]): Promise<void> {
    const hashes = (await batch(
      this.#url,
      works.map((w) => [
        "eth_sendTransaction",
        [
          {
            from: BIG_CHAIN_SENDER,
            ...(w.to === undefined ? {} : { to: w.to }),
            data: w.data,
            value: quantity(w.value),
            gas: quantity(w.gas),
            gasPrice: "0x0",
            nonce: quantity(this.#nonce++),
          },
        ],
      ]),
    )) as string[];
    await rpc(this.#url, "evm_mine", [BIG_CHAIN_FIRST_TIME + Number(this.#next) - 1]);
    const receipts = (await batch(
      this.#url,
      hashes.map((h) => ["eth_getTransactionReceipt", [h]]),
    )) as ({ status: string; blockNumber: string } | null)[];
    receipts.forEach((r, i) => {
      if (r === null || BigInt(r.blockNumber) !== this.#next || r.status !== "0x1")
        throw new Error(
          `transaction ${hashes[i]} of block ${this.#next}: ${JSON.stringify(r)} (not mined in it, or failed)`,
        );
    });
    this.#next++;
  }

  /** Empty blocks up to `head`, in batches of evm_mine, each at its fixed time. */
  async emptyBlocksUpTo(head: bigint): Promise<void> {
    while (this.#next <= head) {
      const calls: (readonly [string, unknown[]])[] = [];
      for (; this.#next <= head && calls.length < MINE_BATCH; this.#next++)
        calls.push(["evm_mine", [BIG_CHAIN_FIRST_TIME + Number(this.#next) - 1]]);
      await batch(this.#url, calls);
    }
  }
}

/** Groups works into blocks whose gas fits the state blocks' gas limit. */
function intoBlocks(works: readonly Work[]): Work[][] {
  const blocks: Work[][] = [];
  let gas = 0n;
  for (const w of works) {
    const last = blocks.at(-1);
    if (
      last === undefined ||
      gas + w.gas > STATE_BLOCK_GAS_LIMIT ||
      last.length >= MAX_TXS_PER_BLOCK
    ) {
      blocks.push([w]);
      gas = w.gas;
    } else {
      last.push(w);
      gas += w.gas;
    }
  }
  return blocks;
}

/** Calls of the filler at `to` covering `total` indexes, `per` at a time. */
function fillerWorks(to: string, mode: 0 | 1, total: number, per: number): Work[] {
  const works: Work[] = [];
  for (let start = 0; start < total; start += per) {
    const count = Math.min(per, total - start);
    const end = start + count;
    works.push({
      to,
      data: fillerCall(mode, start, count),
      // Pays i + 1 for each i in [start, end).
      value:
        mode === 0 ? (BigInt(end) * BigInt(end + 1) - BigInt(start) * BigInt(start + 1)) / 2n : 0n,
      gas: GAS_BASE + BigInt(count) * (mode === 0 ? GAS_PER_ACCOUNT : GAS_PER_SLOT),
    });
  }
  return works;
}

function validate(opts: BigChainOptions): Required<BigChainOptions> {
  const contracts = opts.contracts ?? 1;
  for (const [name, value, min] of [
    ["blocks", opts.blocks, 1],
    ["accounts", opts.accounts, 0],
    ["slots", opts.slots, 0],
    ["contracts", contracts, 1],
    ["emptyAfter", opts.emptyAfter ?? 0, 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min)
      throw new Error(`${name} must be an integer of at least ${min}, not ${value}`);
  }
  if (contracts > 100) throw new Error(`contracts must be at most 100, not ${contracts}`);
  return { ...opts, contracts, emptyAfter: opts.emptyAfter ?? 0 };
}

/** Indexes spread over [0, total): the first, the last and some between. */
function spread(total: number): number[] {
  if (total === 0) return [];
  const out = new Set<number>([0, total - 1]);
  for (let k = 1; out.size < Math.min(SAMPLES, total); k++)
    out.add(Math.floor((total * k) / SAMPLES) % total);
  return [...out].sort((a, b) => a - b);
}

/**
 * Builds the chain on a devnet node at genesis: turns automine off (it stays off), deploys the
 * fillers, pays `accounts` accounts, writes `slots` slots in each filler, mines empty blocks up
 * to `blocks`, then reads back the head and samples of balances and slots and checks them.
 */
export async function buildBigChain(
  target: BigChainTarget,
  options: BigChainOptions,
): Promise<BigChain> {
  const opts = validate(options);
  const url = typeof target === "string" ? target : target.url;
  const clock = new PhaseClock(typeof target === "string" ? undefined : target.process?.pid);

  // The plan: block by block, the transactions that carry the state, sent from the sender with
  // nonces 0, 1, … (the fillers first: their addresses follow from those nonces).
  const runtime = deployCode(FILLER_RUNTIME);
  const contracts = Array.from({ length: opts.contracts }, (_, i) =>
    createdAddress(BIG_CHAIN_SENDER, i),
  );
  const deployBlock: Work[] = contracts.map(() => ({ data: runtime, value: 0n, gas: 200_000n }));
  const accountBlocks = intoBlocks(fillerWorks(contracts[0]!, 0, opts.accounts, ACCOUNTS_PER_TX));
  const slotBlocks = intoBlocks(
    contracts.flatMap((c) => fillerWorks(c, 1, opts.slots, SLOTS_PER_TX)),
  );
  const stateBlocks = 1 + accountBlocks.length + slotBlocks.length;
  if (stateBlocks + opts.emptyAfter > opts.blocks)
    throw new Error(
      `the state takes ${stateBlocks} blocks and ${opts.emptyAfter} follow it, more than the ${opts.blocks} wanted`,
    );
  const firstStateBlock = BigInt(opts.blocks - opts.emptyAfter - stateBlocks + 1);

  const [chainId, head, pending] = (await batch(url, [
    ["eth_chainId", []],
    ["eth_blockNumber", []],
    ["eth_getBlockByNumber", ["pending", false]],
  ])) as [string, string, Block];
  if (BigInt(chainId) !== 32n) throw new Error(`not a devnet node: chain id ${chainId}`);
  if (BigInt(head) !== 0n) throw new Error(`the node's head is block ${BigInt(head)}, not genesis`);
  const ownGasLimit = pending.gasLimit;

  // Empty blocks first, while the state is small: on a node that keeps a window of states
  // (devnet's 128 blocks) each block costs time that grows with the state (13 ms of CPU per
  // empty block after 50,000 accounts, against 0.2 ms at genesis).
  await rpc(url, "evm_setAutomine", [false]);
  const builder = new Builder(url);
  await builder.emptyBlocksUpTo(firstStateBlock - 1n);
  clock.lap("emptyBlocks");

  await rpc(url, "evm_setBlockGasLimit", [quantity(STATE_BLOCK_GAS_LIMIT)]);
  await builder.block(deployBlock);
  clock.lap("deploy");
  for (const block of accountBlocks) await builder.block(block);
  clock.lap("accounts");
  for (const block of slotBlocks) await builder.block(block);
  clock.lap("slots");
  await rpc(url, "evm_setBlockGasLimit", [ownGasLimit]);
  await builder.emptyBlocksUpTo(BigInt(opts.blocks));
  clock.lap("emptyAfter");

  const sampleAccounts = spread(opts.accounts).map(filledAccount);
  const sampleSlots = contracts.flatMap((c) => spread(opts.slots).map((i) => filledSlot(c, i)));
  const latest = await check(url, BigInt(opts.blocks), sampleAccounts, sampleSlots);
  clock.lap("check");

  return {
    head: BigInt(latest.number),
    headHash: latest.hash,
    stateRoot: latest.stateRoot,
    accountsCreated: opts.accounts,
    slotsWritten: opts.slots * opts.contracts,
    contracts,
    firstStateBlock,
    sampleAccounts,
    sampleSlots,
    seconds: clock.wall(),
    cpuSeconds: clock.cpu(),
  };
}

type Phase = Exclude<keyof BigChainPhases, "total">;

/** Wall-clock and (on Linux) a process's CPU seconds per phase of the build. */
class PhaseClock {
  readonly #pid: number | undefined;
  readonly #wall: Partial<Record<Phase, number>> = {};
  readonly #cpu: Partial<Record<Phase, number>> = {};
  readonly #wall0 = performance.now();
  readonly #cpu0: number | undefined;
  #lastWall = this.#wall0;
  #lastCPU: number | undefined;

  constructor(pid: number | undefined) {
    this.#pid = pid;
    this.#cpu0 = this.#lastCPU = cpuSecondsOf(pid);
  }

  lap(phase: Phase): void {
    const now = performance.now();
    this.#wall[phase] = (now - this.#lastWall) / 1000;
    this.#lastWall = now;
    const cpu = cpuSecondsOf(this.#pid);
    if (cpu !== undefined && this.#lastCPU !== undefined) this.#cpu[phase] = cpu - this.#lastCPU;
    this.#lastCPU = cpu;
  }

  wall(): BigChainPhases {
    return phases(this.#wall, (this.#lastWall - this.#wall0) / 1000);
  }

  cpu(): BigChainPhases | undefined {
    if (this.#cpu0 === undefined || this.#lastCPU === undefined) return undefined;
    return phases(this.#cpu, this.#lastCPU - this.#cpu0);
  }
}

function phases(p: Partial<Record<Phase, number>>, total: number): BigChainPhases {
  return {
    deploy: p.deploy ?? 0,
    accounts: p.accounts ?? 0,
    slots: p.slots ?? 0,
    emptyBlocks: p.emptyBlocks ?? 0,
    emptyAfter: p.emptyAfter ?? 0,
    check: p.check ?? 0,
    total,
  };
}

/** User and system CPU seconds of a process from /proc (Linux, 100 ticks a second). */
function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Reads back the head, the samples' balances and slots; throws at the first that differs. */
async function check(
  url: string,
  head: bigint,
  accounts: readonly SampleAccount[],
  slots: readonly SampleSlot[],
): Promise<Block> {
  const latest = (await rpc(url, "eth_getBlockByNumber", ["latest", false])) as Block;
  if (BigInt(latest.number) !== head)
    throw new Error(`the head is block ${BigInt(latest.number)}, not ${head}`);
  const balances = (await batch(
    url,
    accounts.map((a) => ["eth_getBalance", [a.address, latest.hash]]),
  )) as string[];
  balances.forEach((b, i) => {
    if (BigInt(b) !== accounts[i]!.balance)
      throw new Error(
        `balance of ${accounts[i]!.address}: ${BigInt(b)}, not ${accounts[i]!.balance}`,
      );
  });
  const values = (await batch(
    url,
    slots.map((s) => ["eth_getStorageAt", [s.address, s.slot, latest.hash]]),
  )) as string[];
  values.forEach((v, i) => {
    const s = slots[i]!;
    if (BigInt(v) !== s.value)
      throw new Error(`slot ${s.slot} of ${s.address}: ${BigInt(v)}, not ${s.value}`);
  });
  return latest;
}
