import { setFlagsFromString } from "node:v8";

/**
 * How soon V8 optimizes the node's hot code, set before the rest of the node loads.
 *
 * V8 11 (Node 20) optimizes a function with TurboFan once it has used up its interrupt budget
 * (66 kB of bytecode run) three times plus once per 150 bytes of its own size. What runs once a
 * block (building, sealing, writing and announcing it) gets there only after thousands of
 * blocks, so a freshly started node spends its first thousands of transactions in the
 * interpreter, compiling as it goes. With an eighth of that budget, 2,000 transfers sent one by
 * one to a fresh node cost 1,650 µs of CPU each instead of 1,900; once everything is compiled
 * (after 4,000), the cost is the same either way.
 *
 * V8 12 and later (Node 22, 24) count calls instead, with Maglev in between; fewer calls before
 * TurboFan there compiled much more and cost more CPU (1,570 to 1,940 µs a transfer), so they
 * keep their defaults. A budget the operator gives (`--interrupt-budget` in the node's options)
 * is kept.
 */
const INTERRUPT_BUDGET = 8448;

const v8Major = Number(process.versions.v8.split(".")[0]);
const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some((arg) =>
  /^--interrupt[-_]budget=/.test(arg),
);
if (v8Major < 12 && !given) setFlagsFromString(`--interrupt-budget=${INTERRUPT_BUDGET}`);
