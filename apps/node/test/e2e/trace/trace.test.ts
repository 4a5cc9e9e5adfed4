import { type Contract, ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// debug_trace* (struct logger, callTracer, prestateTracer) and trace_* of one transaction that
// creates (CREATE, CREATE2), calls, delegatecalls, reverts inside try/catch, runs a subcall out
// of gas and self-destructs; the callTracer tree and the trace_* list must tell the same story.
const KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const ZERO_HASH = `0x${"00".repeat(32)}`;

interface CallFrame {
  type: string;
  from: string;
  to?: string;
  gas: string;
  gasUsed: string;
  input: string;
  output?: string;
  value?: string;
  error?: string;
  revertReason?: string;
  calls?: CallFrame[];
  logs?: { address: string; topics: string[]; data: string; position: string }[];
}

interface ParityTrace {
  action: Record<string, string>;
  blockHash: string;
  blockNumber: number;
  error?: string;
  result: Record<string, string> | null;
  subtraces: number;
  traceAddress: number[];
  transactionHash: string;
  transactionPosition: number;
  type: string;
}

interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  stack?: string[];
  memory?: string[];
  storage?: Record<string, string>;
  error?: string;
}

let node: RunningNode;
let provider: JsonRpcProvider;
let owner: Wallet;
let tracing: Contract;
let tracingAddress: string;
let txHash: string;
let blockHash: string;
let blockNumber: number;
let gasUsed: bigint;

async function result<T>(method: string, params: unknown[]): Promise<T> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result as T;
}

beforeAll(async () => {
  node = await startNode({ args: ["--rpc-modules", "eth,net,web3,rpc,evm,debug,trace"] });
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  owner = new Wallet(KEY, provider);
  const { Tracing } = compile("../trace/Tracing.sol");
  tracing = (await (
    await new ContractFactory(Tracing!.abi, Tracing!.bytecode, owner).deploy()
  ).waitForDeployment()) as Contract;
  tracingAddress = (await tracing.getAddress()).toLowerCase();
  const tx = await tracing.getFunction("run")({ value: 3n, gasLimit: 3_000_000n });
  const receipt = await tx.wait();
  expect(receipt.status).toBe(1);
  txHash = tx.hash;
  blockHash = receipt.blockHash;
  blockNumber = receipt.blockNumber;
  gasUsed = receipt.gasUsed;
}, 60_000);
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

function flatten(frame: CallFrame): CallFrame[] {
  return [frame, ...(frame.calls ?? []).flatMap(flatten)];
}

describe("callTracer", () => {
  it("gives the tree of frames in geth's format", async () => {
    const top = await result<CallFrame>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer" },
    ]);
    expect(top.type).toBe("CALL");
    expect(top.from).toBe(owner.address.toLowerCase());
    expect(top.to).toBe(tracingAddress);
    expect(top.value).toBe("0x3");
    expect(top.gas).toBe(`0x${(3_000_000).toString(16)}`);
    expect(BigInt(top.gasUsed)).toBe(gasUsed);
    expect(top.input).toBe(tracing.interface.encodeFunctionData("run"));
    expect(top.output).toBe(`0x${"5".padStart(64, "0")}`);
    expect(top.error).toBeUndefined();
    const kinds = (top.calls ?? []).map((c) => c.type);
    expect(kinds).toEqual([
      "CREATE",
      "CREATE2",
      "CALL",
      "DELEGATECALL",
      "STATICCALL",
      "CALL",
      "STATICCALL",
      "CALL",
    ]);
    const [created, created2, set, delegated, failed, burnt, read, bye] = top.calls!;
    expect(created!.value).toBe("0x1");
    expect(created!.to).toMatch(/^0x[0-9a-f]{40}$/);
    expect(created2!.value).toBe("0x0");
    expect(set!.to).toBe(created!.to);
    expect(delegated!.from).toBe(tracingAddress);
    expect(delegated!.to).toBe(created2!.to);
    expect(failed!.error).toBe("execution reverted");
    expect(failed!.revertReason).toBe("nope");
    expect(failed!.output?.startsWith("0x08c379a0")).toBe(true);
    expect(failed!.value).toBeUndefined();
    expect(burnt!.error).toBe("out of gas");
    expect(burnt!.gasUsed).toBe(burnt!.gas);
    expect(read!.output).toBe(`0x${"5".padStart(64, "0")}`);
    expect(bye!.calls).toEqual([
      {
        type: "SELFDESTRUCT",
        from: created!.to,
        to: owner.address.toLowerCase(),
        gas: "0x0",
        gasUsed: "0x0",
        input: "0x",
        value: "0x1",
      },
    ]);
    // Every inner frame used at most what it was given.
    for (const frame of flatten(top))
      expect(BigInt(frame.gasUsed)).toBeLessThanOrEqual(BigInt(frame.gas));

    expect(top.logs).toBeUndefined();

    const withLog = await result<CallFrame>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer", tracerConfig: { withLog: true } },
    ]);
    const ran = tracing.interface.getEvent("Ran")!.topicHash;
    expect(withLog.logs).toEqual([
      {
        address: tracingAddress,
        topics: [ran],
        data: `0x${"5".padStart(64, "0")}`,
        position: "0x8",
      },
    ]);
    // Child.set's Set(v): in the called child, and in the delegatecall on this contract's behalf
    expect(withLog.calls![2]!.logs?.[0]).toMatchObject({ address: created!.to, position: "0x0" });
    expect(withLog.calls![3]!.logs?.[0]).toMatchObject({
      address: tracingAddress,
      data: `0x${"9".padStart(64, "0")}`,
    });
    expect(withLog.calls![4]!.logs).toBeUndefined();

    const onlyTop = await result<CallFrame>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer", tracerConfig: { onlyTopCall: true } },
    ]);
    expect(onlyTop.calls).toBeUndefined();
    // tracerConfig keys are taken at the top level too
    const flat = await result<CallFrame>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer", onlyTopCall: true },
    ]);
    expect(flat).toEqual(onlyTop);
  });

  it("agrees with trace_transaction frame by frame", async () => {
    const top = await result<CallFrame>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer" },
    ]);
    const traces = await result<ParityTrace[]>("trace_transaction", [txHash]);
    const frames = flatten(top);
    expect(traces).toHaveLength(frames.length);
    // Depth-first order on both sides: walk the tree with trace addresses.
    const addresses: number[][] = [];
    const walk = (f: CallFrame, at: number[]) => {
      addresses.push(at);
      (f.calls ?? []).forEach((c, i) => {
        walk(c, [...at, i]);
      });
    };
    walk(top, []);
    traces.forEach((t, i) => {
      const f = frames[i]!;
      expect(t.traceAddress).toEqual(addresses[i]);
      expect(t.subtraces).toBe(f.calls?.length ?? 0);
      expect(t.blockHash).toBe(blockHash);
      expect(t.blockNumber).toBe(blockNumber);
      expect(t.transactionHash).toBe(txHash);
      expect(t.transactionPosition).toBe(0);
      if (f.type === "SELFDESTRUCT") {
        expect(t.type).toBe("suicide");
        expect(t.action).toEqual({ address: f.from, refundAddress: f.to, balance: f.value });
        return;
      }
      if (f.type === "CREATE" || f.type === "CREATE2") {
        expect(t.type).toBe("create");
        expect(t.action.creationMethod).toBe(f.type.toLowerCase());
        expect(t.action.init).toBe(f.input);
        expect(t.result?.address).toBe(f.to);
      } else {
        expect(t.type).toBe("call");
        expect(t.action.callType).toBe(f.type.toLowerCase());
        expect(t.action.to).toBe(f.to);
        expect(t.action.input).toBe(f.input);
      }
      expect(t.action.from).toBe(f.from);
      expect(t.action.value).toBe(f.value ?? "0x0");
      if (i === 0) return; // the top frame counts the transaction's gas differently (below)
      expect(t.action.gas).toBe(f.gas);
      if (f.error === undefined) {
        expect(t.error).toBeUndefined();
        expect(t.result?.gasUsed).toBe(f.gasUsed);
      } else {
        expect(t.result).toBeNull();
        expect(t.error).toBe(f.error === "execution reverted" ? "Reverted" : "Out of gas");
      }
    });
    // OpenEthereum's top frame: the gas after the intrinsic gas, and execution's use.
    expect(BigInt(traces[0]!.action.gas!)).toBeLessThan(3_000_000n);
    expect(traces[0]!.result?.output).toBe(top.output);
  });
});

describe("the struct logger", () => {
  it("logs each step in geth's format", async () => {
    const trace = await result<{
      gas: number;
      failed: boolean;
      returnValue: string;
      structLogs: StructLog[];
    }>("debug_traceTransaction", [txHash]);
    expect(trace.failed).toBe(false);
    expect(BigInt(trace.gas)).toBe(gasUsed);
    expect(trace.returnValue).toBe("5".padStart(64, "0"));
    const logs = trace.structLogs;
    expect(logs.length).toBeGreaterThan(100);
    expect(logs[0]).toMatchObject({ pc: 0, op: "PUSH1", depth: 1 });
    expect(logs[0]!.stack).toEqual([]);
    expect(["RETURN", "STOP", "REVERT"]).toContain(logs.at(-1)!.op);
    expect(logs.at(-1)!.depth).toBe(1);
    const frameOps = new Set([
      "CALL",
      "STATICCALL",
      "DELEGATECALL",
      "CALLCODE",
      "CREATE",
      "CREATE2",
    ]);
    let entered = 0;
    for (let i = 1; i < logs.length; i++) {
      const [a, b] = [logs[i - 1]!, logs[i]!];
      if (b.depth > a.depth) {
        // a frame starts right after the opcode that makes it, one level down
        expect(frameOps.has(a.op)).toBe(true);
        expect(b.depth).toBe(a.depth + 1);
        expect(b.pc).toBe(0);
        entered++;
      } else if (b.depth === a.depth && !frameOps.has(a.op)) {
        // within a frame, gas only goes down, by the step's cost
        expect(b.gas).toBe(a.gas - a.gasCost);
      } else if (b.depth < a.depth) {
        expect(
          ["RETURN", "STOP", "REVERT", "SELFDESTRUCT", "INVALID"].includes(a.op) ||
            a.error !== undefined,
        ).toBe(true);
      }
      for (const word of b.stack ?? []) expect(word).toMatch(/^0x[0-9a-f]+$/);
      for (const word of b.memory ?? []) expect(word).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(entered).toBe(8); // the eight frames the contract opens (the self-destruct opens none)
    const oog = logs.find((l) => l.error !== undefined);
    expect(oog?.error).toBe("out of gas");
    const sstore = logs.find((l) => l.op === "SSTORE" && l.depth === 1)!;
    expect(Object.keys(sstore.storage!)).toContain("0".repeat(64));
    expect(logs.find((l) => l.op === "JUMPDEST")!.storage).toBeUndefined();
  });

  it("leaves out the stack, memory and storage on request, and the trace of a block is per transaction", async () => {
    const lean = await result<{ structLogs: StructLog[] }>("debug_traceTransaction", [
      txHash,
      { disableStack: true, disableMemory: true, disableStorage: true },
    ]);
    for (const log of lean.structLogs) {
      expect(log.stack).toBeUndefined();
      expect(log.memory).toBeUndefined();
      expect(log.storage).toBeUndefined();
    }
    const byHash = await result<{ txHash: string; result: unknown }[]>("debug_traceBlockByHash", [
      blockHash,
      { tracer: "callTracer" },
    ]);
    expect(byHash).toHaveLength(1);
    expect(byHash[0]!.txHash).toBe(txHash);
    expect(byHash[0]!.result).toEqual(
      await result("debug_traceTransaction", [txHash, { tracer: "callTracer" }]),
    );
    const byNumber = await result("debug_traceBlockByNumber", [
      `0x${blockNumber.toString(16)}`,
      { tracer: "callTracer" },
    ]);
    expect(byNumber).toEqual(byHash);
  });

  it("stops with a clear error past its size limit instead of exhausting memory", async () => {
    const tx = await tracing.getFunction("grow")(200_000n, 300n, { gasLimit: 1_000_000n });
    const receipt = await tx.wait();
    expect(receipt.status).toBe(1);
    const res = await call(node.url, "debug_traceTransaction", [tx.hash]);
    expect(res.error?.code).toBe(-32011);
    expect(res.error?.message).toMatch(/the trace is larger than \d+ bytes/);
    const lean = await result<{ structLogs: StructLog[] }>("debug_traceTransaction", [
      tx.hash,
      { disableMemory: true, disableStack: true },
    ]);
    expect(lean.structLogs.length).toBeGreaterThan(300);
  });
});

describe("prestateTracer", () => {
  it("gives the touched accounts before the transaction, and what changed in diff mode", async () => {
    const pre = await result<
      Record<
        string,
        { balance?: string; nonce?: number; code?: string; storage?: Record<string, string> }
      >
    >("debug_traceTransaction", [txHash, { tracer: "prestateTracer" }]);
    const sender = owner.address.toLowerCase();
    expect(pre[sender]!.balance).toMatch(/^0x[0-9a-f]+$/);
    expect(pre[sender]!.nonce).toBe(1);
    expect(pre[tracingAddress]!.code).toMatch(/^0x60/);
    expect(pre[tracingAddress]!.storage).toEqual({
      [`0x${"0".repeat(64)}`]: `0x${"0".repeat(64)}`,
    });

    const diff = await result<{
      pre: Record<string, { nonce?: number; storage?: Record<string, string> }>;
      post: Record<string, { nonce?: number; storage?: Record<string, string> }>;
    }>("debug_traceTransaction", [
      txHash,
      { tracer: "prestateTracer", tracerConfig: { diffMode: true } },
    ]);
    expect(diff.pre[sender]!.nonce).toBe(1);
    expect(diff.post[sender]!.nonce).toBe(2);
    // the delegatecall wrote 9 to slot 0 (Child.value shares it with Tracing.stored), then 5 was added
    expect(diff.post[tracingAddress]!.storage).toEqual({
      [`0x${"0".repeat(64)}`]: `0x${"e".padStart(64, "0")}`,
    });
  });
});

describe("trace_block and trace_filter", () => {
  it("trace a block, the genesis (none) and nothing for unknown hashes", async () => {
    const block = await result<ParityTrace[]>("trace_block", [`0x${blockNumber.toString(16)}`]);
    expect(block).toEqual(await result("trace_transaction", [txHash]));
    expect(await result("trace_block", [blockHash])).toEqual(block);
    expect(await result("trace_block", ["0x0"])).toEqual([]);
    expect(await result("trace_block", [`0x${"ab".repeat(32)}`])).toBeNull();
    expect(await result("trace_transaction", [ZERO_HASH])).toBeNull();
    expect(await result("debug_traceTransaction", [ZERO_HASH])).toBeNull();
    const unknown = await call(node.url, "debug_traceBlockByHash", [ZERO_HASH]);
    expect(unknown.error?.code).toBe(-32602);
  });

  it("filters by block range and address, pages with after and count, and refuses bad limits", async () => {
    const range = {
      fromBlock: `0x${blockNumber.toString(16)}`,
      toBlock: `0x${blockNumber.toString(16)}`,
    };
    const all = await result<ParityTrace[]>("trace_filter", [range]);
    expect(all).toEqual(await result("trace_transaction", [txHash]));
    const everything = await result<ParityTrace[]>("trace_filter", [{}]);
    expect(everything.filter((t) => t.transactionHash === txHash)).toEqual(all);
    const toTracing = await result<ParityTrace[]>("trace_filter", [
      { ...range, toAddress: [tracingAddress] },
    ]);
    expect(toTracing.length).toBeGreaterThan(0);
    for (const t of toTracing) expect(t.action.to).toBe(tracingAddress);
    const paged = await result<ParityTrace[]>("trace_filter", [{ ...range, after: 2, count: 3 }]);
    expect(paged).toEqual(all.slice(2, 5));

    const tooMany = await call(node.url, "trace_filter", [{ count: 10_001 }]);
    expect(tooMany.error).toEqual({
      code: -32602,
      message: "Count value too big. Maximum 10000 traces allowed.",
    });
    const negative = await call(node.url, "trace_filter", [{ after: -1 }]);
    expect(negative.error).toEqual({ code: -32602, message: "After value cannot be negative." });
    const reversed = await call(node.url, "trace_filter", [{ fromBlock: "0x2", toBlock: "0x1" }]);
    expect(reversed.error).toEqual({
      code: -32602,
      message: "fromBlock cannot be greater than toBlock",
    });
  });
});

describe("the modules", () => {
  it("are off unless --rpc-modules names them", async () => {
    const plain = await startNode();
    try {
      const res = await call(plain.url, "debug_traceTransaction", [txHash]);
      expect(res.error?.code).toBe(-32601);
      const trace = await call(plain.url, "trace_transaction", [txHash]);
      expect(trace.error?.code).toBe(-32601);
    } finally {
      await plain.stop();
    }
  });

  it("trace only blocks whose state is kept: older ones are -32000", async () => {
    const pruned = await startNode({
      args: ["--rpc-modules", "eth,net,web3,rpc,evm,debug,trace", "--state-window", "2"],
    });
    try {
      const p = new JsonRpcProvider(pruned.url, 33, { staticNetwork: true, cacheTimeout: -1 });
      const sender = new Wallet(KEY, p);
      const first = await (await sender.sendTransaction({ to: sender.address, value: 1n })).wait();
      for (let i = 0; i < 5; i++) await call(pruned.url, "evm_mine", []);
      const old = await call(pruned.url, "debug_traceTransaction", [first!.hash]);
      expect(old.error?.code).toBe(-32000);
      expect(old.error?.message).toMatch(/^state of block \d+ is (pruned|not available)/);
      const traces = await call(pruned.url, "trace_transaction", [first!.hash]);
      expect(traces.error?.code).toBe(-32000);
      const recent = await (await sender.sendTransaction({ to: sender.address, value: 1n })).wait();
      const ok = await call(pruned.url, "trace_transaction", [recent!.hash]);
      expect(ok.result).toHaveLength(1);
      p.destroy();
    } finally {
      await pruned.stop();
    }
  });

  it("refuse an unknown tracer", async () => {
    const res = await call(node.url, "debug_traceTransaction", [txHash, { tracer: "4byteTracer" }]);
    expect(res.error?.code).toBe(-32602);
    expect(res.error?.message).toContain("4byteTracer");
  });
});
