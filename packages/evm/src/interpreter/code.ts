import { wordOf } from "../words.js";
import { Op } from "./opcodes.js";

/** Jump destinations and push values of a code array, made once per array. */
interface CodeInfo {
  /** 1 where a JUMPDEST is an opcode (not push data). */
  readonly jumps: Uint8Array;
  /** The value each PUSH3…PUSH32 at that offset pushes (right-padded at the code's end). */
  readonly pushes: (bigint | undefined)[];
}

const codeInfos = new WeakMap<Uint8Array, CodeInfo>();

export function analyse(code: Uint8Array): CodeInfo {
  let info = codeInfos.get(code);
  if (info !== undefined) return info;
  const jumps = new Uint8Array(code.length);
  const pushes: (bigint | undefined)[] = [];
  for (let pc = 0; pc < code.length; pc++) {
    const op = code[pc]!;
    if (op === Op.JUMPDEST) jumps[pc] = 1;
    else if (op >= Op.PUSH1 && op <= Op.PUSH32) {
      const n = op - Op.PUSH0;
      if (n >= 3) {
        // Past the code's end a push reads zeros: its bytes are shifted up as if they were there.
        const have = Math.min(n, code.length - pc - 1);
        pushes[pc] = wordOf(code, pc + 1, have) << BigInt(8 * (n - have));
      }
      pc += n;
    }
  }
  info = { jumps, pushes };
  codeInfos.set(code, info);
  return info;
}
