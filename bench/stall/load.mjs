// The heavy clients of the stall bench, on a thread of their own so that reading their large
// answers never delays the eth_blockNumber probe (bench/stall/run.mjs). Each client sends its
// request one after another on its own connection until told to stop, and checks each answer.
import { parentPort, workerData } from "node:worker_threads";
import { RPCClient } from "../lib/http.mjs";

const { port, traces, logQueries, txHash, gasUsed, tracer, fromBlock, toBlock, logs } = workerData;
let stop = false;
const counts = { traces: 0, logQueries: 0 };
parentPort.on("message", (message) => {
  if (message === "stop") stop = true;
});

async function loop(call, check, key) {
  const rpc = new RPCClient(port);
  try {
    while (!stop) {
      check(await call(rpc));
      counts[key]++;
    }
  } finally {
    rpc.close();
  }
}

const loops = [];
for (let i = 0; i < traces; i++)
  loops.push(
    loop(
      (rpc) => rpc.call("debug_traceTransaction", [txHash, tracer], 600_000),
      (result) => {
        const gas = result.gasUsed ?? result.gas;
        if (BigInt(gas) !== BigInt(gasUsed))
          throw new Error(`the trace's gas ${gas} is not the receipt's ${gasUsed}`);
      },
      "traces",
    ),
  );
for (let i = 0; i < logQueries; i++)
  loops.push(
    loop(
      (rpc) => rpc.call("eth_getLogs", [{ fromBlock, toBlock }], 600_000),
      (result) => {
        if (result.length !== logs)
          throw new Error(`eth_getLogs: ${result.length} logs, not ${logs}`);
      },
      "logQueries",
    ),
  );
parentPort.postMessage({ kind: "started" });
Promise.all(loops).then(
  () => parentPort.postMessage({ kind: "done", counts }),
  (err) => {
    stop = true;
    parentPort.postMessage({ kind: "failed", message: err.message, counts });
  },
);
