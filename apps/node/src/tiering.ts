import { setFlagsFromString } from "node:v8";

/**
 * How soon and how large V8 optimizes the node's hot code, set before the rest of the node
 * loads.
 *
 * V8 11 (Node 20) optimizes a function with TurboFan once it has used up its interrupt budget
 * (66 kB of bytecode run) three times plus once per 150 bytes of its own size. What runs once a
 * block (building, sealing, writing and announcing it) gets there only after thousands of
 * blocks, so a freshly started node spends its first thousands of transactions in the
 * interpreter, compiling as it goes. With an eighth of that budget, 2,000 transfers sent one by
 * one to a fresh node cost 1,650 µs of CPU each instead of 1,900; once everything is compiled
 * (after 4,000), the cost is the same either way.
 *
 * TurboFan then compiles each such function with its callees inlined, up to 920 bytes of their
 * bytecode: a block's path is a long chain of async functions, each compiled with most of the
 * next. On V8 11 that compiling took a third of a fresh node's CPU in its first 2,000 transfers
 * (300 functions, 1.7 s on the compiler's thread). With inlining capped at 300 bytes, 2,000 ETH
 * transfers and then 2,000 ERC-20 transfers to a fresh node cost 1,325–1,440 and 1,400–1,580 µs
 * each instead of 1,510–1,695 and 1,555–1,785; a warm node runs transfers and `eth_call` as
 * fast either way.
 *
 * V8 12 and later (Node 22, 24) count calls instead, with Maglev in between; fewer calls before
 * TurboFan there compiled much more and cost more CPU (1,570 to 1,940 µs a transfer), and the
 * cap moved nothing measurable, so they keep their defaults. A value the operator gives in the
 * node's options (`--interrupt-budget`, `--max-inlined-bytecode-size-cumulative`) is kept.
 */
const INTERRUPT_BUDGET = 8448;
const MAX_INLINED_BYTECODE_CUMULATIVE = 300;

const v8Major = Number(process.versions.v8.split(".")[0]);
const options = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
const given = (flag: RegExp) => options.some((arg) => flag.test(arg));
if (v8Major < 12) {
  if (!given(/^--interrupt[-_]budget=/))
    setFlagsFromString(`--interrupt-budget=${INTERRUPT_BUDGET}`);
  if (!given(/^--max[-_]inlined[-_]bytecode[-_]size[-_]cumulative=/))
    setFlagsFromString(`--max-inlined-bytecode-size-cumulative=${MAX_INLINED_BYTECODE_CUMULATIVE}`);
}
