/** `@ethereumjs/evm`'s halt reasons in geth's words (`core/vm/errors.go`). */
const GETH: Readonly<Record<string, string>> = {
  revert: "execution reverted",
  "out of gas": "out of gas",
  "code store out of gas": "contract creation code storage out of gas",
  "code size to deposit exceeds maximum code size": "max code size exceeded",
  "stack underflow": "stack underflow",
  "stack overflow": "stack limit reached 1024",
  "invalid JUMP": "invalid jump destination",
  "invalid opcode": "invalid opcode",
  "value out of range": "return data out of bounds",
  "static state change": "write protection",
  "create collision": "contract address collision",
  "insufficient balance": "insufficient balance for transfer",
  "invalid bytecode deployed": "invalid code: must not begin with 0xef",
  "initcode exceeds max initcode size": "max initcode size exceeded",
};

/** OpenEthereum's words for the same (`trace_*` results). */
const PARITY: Readonly<Record<string, string>> = {
  revert: "Reverted",
  "out of gas": "Out of gas",
  "code store out of gas": "Out of gas",
  "code size to deposit exceeds maximum code size": "Out of gas",
  "stack underflow": "Stack underflow",
  "stack overflow": "Out of stack",
  "invalid JUMP": "Bad jump destination",
  "invalid opcode": "Bad instruction",
  "value out of range": "Out of bounds",
  "static state change": "Mutable Call In Static Context",
  "insufficient balance": "Insufficient balance",
};

/** A halt reason of the EVM as geth's tracers write it. */
export function gethError(error: string): string {
  return GETH[error] ?? error;
}

/** A halt reason of the EVM as OpenEthereum's traces write it. */
export function parityError(error: string): string {
  return PARITY[error] ?? error;
}
