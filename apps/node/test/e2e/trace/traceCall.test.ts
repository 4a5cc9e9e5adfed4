import { type Contract, ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// debug_traceCall: a call traced as debug_traceTransaction traces the same transaction (the
// callTracer tree, the struct logger's steps, the prestateTracer's accounts), on a copy of the
// state after the selected block that is thrown away; bad params are -32602.
const KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const GAS = 3_000_000;

let node: RunningNode;
let provider: JsonRpcProvider;
let owner: Wallet;
let tracing: Contract;
let tracingAddress: string;
/** The call object of `run()` with value 3, as the transaction below sends it. */
let runCall: Record<string, string>;
/** The block before the transaction's, and the transaction. */
let parentNumber: number;
let txHash: string;

async function result<T>(method: string, params: unknown[]): Promise<T> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result as T;
}

const hex = (n: number) => `0x${n.toString(16)}`;

beforeAll(async () => {
  node = await startNode({ args: ["--rpc-modules", "eth,net,web3,rpc,evm,debug,trace"] });
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  owner = new Wallet(KEY, provider);
  const { Tracing } = compile("../trace/Tracing.sol");
  tracing = (await (
    await new ContractFactory(Tracing!.abi, Tracing!.bytecode, owner).deploy()
  ).waitForDeployment()) as Contract;
  tracingAddress = (await tracing.getAddress()).toLowerCase();
  runCall = {
    from: owner.address.toLowerCase(),
    to: tracingAddress,
    value: "0x3",
    gas: hex(GAS),
    data: tracing.interface.encodeFunctionData("run"),
  };
  parentNumber = await provider.getBlockNumber();
  const tx = await tracing.getFunction("run")({ value: 3n, gasLimit: GAS });
  const receipt = await tx.wait();
  expect(receipt.status).toBe(1);
  expect(receipt.blockNumber).toBe(parentNumber + 1);
  txHash = tx.hash;
}, 60_000);
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

describe("debug_traceCall", () => {
  it("gives the callTracer tree of the transaction it would be", async () => {
    const traced = await result<Record<string, unknown>>("debug_traceCall", [
      runCall,
      hex(parentNumber),
      { tracer: "callTracer", tracerConfig: { withLog: true } },
    ]);
    const sent = await result<Record<string, unknown>>("debug_traceTransaction", [
      txHash,
      { tracer: "callTracer", tracerConfig: { withLog: true } },
    ]);
    expect(traced).toEqual(sent);
    expect((traced.calls as unknown[]).length).toBe(8);
  });

  it("gives the struct logger's steps of the transaction it would be", async () => {
    const traced = await result<{ gas: number; failed: boolean; structLogs: unknown[] }>(
      "debug_traceCall",
      [runCall, hex(parentNumber)],
    );
    const sent = await result<typeof traced>("debug_traceTransaction", [txHash]);
    expect(traced.structLogs.length).toBeGreaterThan(100);
    expect(traced).toEqual(sent);
    const light = await result<typeof traced>("debug_traceCall", [
      runCall,
      hex(parentNumber),
      { disableStack: true, disableStorage: true },
    ]);
    expect(light.structLogs).toHaveLength(traced.structLogs.length);
    expect(light.structLogs[0]).not.toHaveProperty("stack");
  });

  it("gives the prestateTracer's accounts of the transaction it would be", async () => {
    const traced = await result<Record<string, unknown>>("debug_traceCall", [
      runCall,
      { blockNumber: hex(parentNumber) },
      { tracer: "prestateTracer" },
    ]);
    const sent = await result<Record<string, unknown>>("debug_traceTransaction", [
      txHash,
      { tracer: "prestateTracer" },
    ]);
    expect(traced).toEqual(sent);
    expect(Object.keys(traced)).toContain(tracingAddress);
  });

  it("runs on latest by default, on pending and by block hash, and changes nothing", async () => {
    const read = tracing.interface.encodeFunctionData("stored");
    const storedBefore = await result<string>("eth_call", [{ to: tracingAddress, data: read }]);
    const nonceBefore = await provider.getTransactionCount(owner.address);
    // run() again fails on latest (its CREATE2 address is taken), the same on every selector
    const latest = await result<{ type: string; error?: string }>("debug_traceCall", [
      runCall,
      undefined,
      { tracer: "callTracer" },
    ]);
    expect(latest.type).toBe("CALL");
    expect(latest.error).toBe("execution reverted");
    const pending = await result<{ type: string }>("debug_traceCall", [
      runCall,
      "pending",
      { tracer: "callTracer" },
    ]);
    expect(pending).toEqual(latest);
    const head = await provider.getBlock("latest");
    const byHash = await result<{ type: string }>("debug_traceCall", [
      runCall,
      { blockHash: head!.hash },
      { tracer: "callTracer" },
    ]);
    expect(byHash).toEqual(latest);
    expect(await result<string>("eth_call", [{ to: tracingAddress, data: read }])).toBe(
      storedBefore,
    );
    expect(await provider.getTransactionCount(owner.address)).toBe(nonceBefore);
  });

  it("traces a failing call, a creation, and a call from a contract, as eth_call runs them", async () => {
    const failing = await result<{ error?: string; revertReason?: string }>("debug_traceCall", [
      {
        from: runCall.from,
        to: tracingAddress,
        data: tracing.interface.encodeFunctionData("grow", [0, 1]),
      },
      "latest",
      { tracer: "callTracer" },
    ]);
    expect(failing.error).toBeDefined();
    // a creation: the init code of Tracing itself, from an address with no funds
    const created = await result<{ type: string; to: string }>("debug_traceCall", [
      { from: "0x00000000000000000000000000000000000000aa", data: compileTracingInit() },
      "latest",
      { tracer: "callTracer" },
    ]);
    expect(created.type).toBe("CREATE");
    expect(created.to).toMatch(/^0x[0-9a-f]{40}$/);
    // a sender with code, and a value its balance does not cover: eth_call runs both
    const fromContract = await result<{ error?: string; value: string }>("debug_traceCall", [
      {
        from: tracingAddress,
        to: "0x00000000000000000000000000000000000000bb",
        value: "0xffffffffffffffffffff",
      },
      "latest",
      { tracer: "callTracer" },
    ]);
    expect(fromContract.value).toBe("0xffffffffffffffffffff");
    expect(fromContract.error).toBeUndefined();
  });

  it("refuses bad params with -32602 and a clear message", async () => {
    const cases: [unknown[], RegExp][] = [
      [[], /missing value for required argument 0/],
      [["0x12"], /invalid argument 0: expected a call object/],
      [[{ to: "0x12" }], /invalid argument 0: to:/],
      [[runCall, "nonsense"], /invalid argument 1/],
      [[runCall, "latest", { tracer: "4byteTracer" }], /tracer "4byteTracer" is not supported/],
      [
        [runCall, "latest", { stateOverrides: {} }],
        /invalid argument 2: stateOverrides is not supported/,
      ],
      [
        [runCall, "latest", { blockOverrides: {} }],
        /invalid argument 2: blockOverrides is not supported/,
      ],
      [
        [{ ...runCall, gas: "0x100" }],
        /invalid argument 0: gas: intrinsic gas too low: have 256, want 21/,
      ],
      [[runCall, "0xffffff"], /not found/],
      [[runCall, "latest", {}, 1], /too many arguments, want at most 3/],
    ];
    for (const [params, message] of cases) {
      const res = await call(node.url, "debug_traceCall", params);
      expect(res.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(res.error?.message, JSON.stringify(params)).toMatch(message);
    }
  });
});

function compileTracingInit(): string {
  const { Tracing } = compile("../trace/Tracing.sol");
  return Tracing!.bytecode;
}
