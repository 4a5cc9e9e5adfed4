import { readFileSync } from "node:fs";
import { Interface } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// Nodex's struct logs against Hardhat's node for the same transactions (recorded by
// `node bench/trace/compare.mjs --record`): the same steps (op, pc, gas, gasCost, depth, stack
// depth), the same frames, except where Nodex follows geth (see knownDifference).

type Step = [op: string, pc: number, gas: number, gasCost: number, depth: number];

interface Run {
  contract: string;
  cases: Record<
    string,
    { status: string; gasUsed: number; failed: boolean; steps: Step[]; stackDepths: number[] }
  >;
}

interface Fixture {
  hardhatVersion: string;
  cases: { name: string; method: string; args: unknown[]; value: string; gas: string }[];
  hardhat: Run;
  nodex: Run;
  differences: string[];
}

const fixture = JSON.parse(
  readFileSync(new URL("./fixtures/hardhat.json", import.meta.url), "utf8"),
) as Fixture;
/** Hardhat's first default account, which Nodex funds on regtest too. */
const SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/** Where Nodex follows geth and Hardhat does not (as in bench/trace/compare.mjs). */
function knownDifference(hh: Step, nx: Step, field: number): boolean {
  if (field !== 3) return false;
  if (hh[0] === "CREATE" || hh[0] === "CREATE2") return true;
  return hh[3] === hh[2] && nx[3] > nx[2];
}

function framesOf(steps: Step[]): [string, number][] {
  const out: [string, number][] = [];
  for (let i = 1; i < steps.length; i++)
    if (steps[i]![4] > steps[i - 1]![4]) out.push([steps[i - 1]![0], steps[i - 1]![4]]);
  return out;
}

let node: RunningNode;
let live: Run;

async function result<T>(method: string, params: unknown[]): Promise<T> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result as T;
}

async function send(tx: Record<string, string>): Promise<{
  hash: string;
  receipt: { status: string; gasUsed: string; contractAddress: string | null };
}> {
  const hash = await result<string>("eth_sendTransaction", [{ from: SENDER, ...tx }]);
  const receipt = await result<{ status: string; gasUsed: string; contractAddress: string | null }>(
    "eth_getTransactionReceipt",
    [hash],
  );
  return { hash, receipt };
}

beforeAll(async () => {
  node = await startNode({ args: ["--rpc-modules", "eth,net,web3,rpc,debug"] });
  const { Tracing } = compile("../trace/Tracing.sol");
  const iface = new Interface(Tracing!.abi as never);
  const deployed = await send({ data: Tracing!.bytecode, gas: "0x2dc6c0" });
  const contract = deployed.receipt.contractAddress!;
  live = { contract, cases: {} };
  for (const c of fixture.cases) {
    const { hash, receipt } = await send({
      to: contract,
      data: iface.encodeFunctionData(c.method, c.args),
      value: c.value,
      gas: c.gas,
    });
    const trace = await result<{
      failed: boolean;
      structLogs: {
        op: string;
        pc: number;
        gas: number;
        gasCost: number;
        depth: number;
        stack?: string[];
      }[];
    }>("debug_traceTransaction", [hash, { disableMemory: true, disableStorage: true }]);
    live.cases[c.name] = {
      status: receipt.status,
      gasUsed: Number(receipt.gasUsed),
      failed: trace.failed,
      steps: trace.structLogs.map((l) => [l.op, l.pc, l.gas, l.gasCost, l.depth]),
      stackDepths: trace.structLogs.map((l) => l.stack?.length ?? 0),
    };
  }
}, 60_000);
afterAll(async () => {
  await node?.stop();
});

describe(`struct logs against Hardhat ${fixture.hardhatVersion}`, () => {
  it("were recorded in agreement", () => {
    expect(fixture.differences).toEqual([]);
    expect(live.contract).toBe(fixture.hardhat.contract);
  });

  for (const c of fixture.cases) {
    it(`agree for ${c.name}(): every step and frame`, () => {
      const hh = fixture.hardhat.cases[c.name]!;
      const nx = live.cases[c.name]!;
      expect(nx.status).toBe("0x1");
      expect(nx.gasUsed).toBe(hh.gasUsed);
      expect(nx.failed).toBe(hh.failed);
      expect(nx.steps).toHaveLength(hh.steps.length);
      const mismatches: string[] = [];
      nx.steps.forEach((step, i) => {
        const theirs = hh.steps[i]!;
        for (let f = 0; f < 5; f++)
          if (step[f] !== theirs[f] && !knownDifference(theirs, step, f))
            mismatches.push(
              `step ${i} field ${f}: ${JSON.stringify(step)} vs ${JSON.stringify(theirs)}`,
            );
        if (nx.stackDepths[i] !== hh.stackDepths[i]) mismatches.push(`step ${i}: stack depth`);
      });
      expect(mismatches.slice(0, 5)).toEqual([]);
      expect(framesOf(nx.steps)).toEqual(framesOf(hh.steps));
      // and Nodex still answers what was recorded of it
      expect(nx.steps).toEqual(fixture.nodex.cases[c.name]!.steps);
    });
  }
});
