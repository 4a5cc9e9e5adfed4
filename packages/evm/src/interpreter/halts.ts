/** Thrown inside a run when the call needs the library; `call` answers `undefined`. */
export class Unsupported {
  constructor(readonly why: string) {}
}

/** An exceptional halt of a frame: all its gas is gone, its changes undone. */
export class Halt {
  constructor(readonly error: string) {}
}

export const OUT_OF_GAS = new Halt("out of gas");
export const STACK_UNDERFLOW = new Halt("stack underflow");
export const STACK_OVERFLOW = new Halt("stack overflow");
export const INVALID_JUMP = new Halt("invalid JUMP");
export const INVALID_OPCODE = new Halt("invalid opcode");
export const STATIC_STATE_CHANGE = new Halt("static state change");

/** The output of a frame that halted exceptionally (its return data is empty). */
export const HALTED = new Uint8Array(0);

/** `undefined` for a run that needs the library; rethrows anything else. */
export function unsupported(error: unknown): undefined {
  if (error instanceof Unsupported) return undefined;
  // Out of JavaScript stack in a deep recursion of frames: the library's run decides.
  if (error instanceof RangeError) return undefined;
  throw error;
}
