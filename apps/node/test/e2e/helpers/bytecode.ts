/** Hand-assembled EVM code for tests that need a contract but no compiler. */

const hexLength = (code: string) => ((code.length - 2) / 2).toString(16).padStart(4, "0");

/** Init code deploying `runtime`: PUSH2 n, DUP1, PUSH1 12, PUSH1 0, CODECOPY, PUSH1 0, RETURN. */
export function deployCode(runtime: string): string {
  return `0x61${hexLength(runtime)}80600c6000396000f3${runtime.slice(2)}`;
}

/** Runtime that reverts with `payload`: PUSH2 n, PUSH1 14, PUSH1 0, CODECOPY, PUSH2 n, PUSH1 0, REVERT. */
export function revertingRuntime(payload: string): string {
  const n = hexLength(payload);
  return `0x61${n}600e60003961${n}6000fd${payload.slice(2)}`;
}
