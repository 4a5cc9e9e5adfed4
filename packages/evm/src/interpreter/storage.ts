/**
 * The storage rules (0x54 SLOAD, 0x55 SSTORE) and their costs, used by the interpreter of calls
 * (`run.ts`) and by the library's opcode table patches (`fastOpcodes.ts`).
 */

/** The costs of a storage access (EIP-2929), as numbers or as the library's bigints. */
export interface AccessCosts<T extends number | bigint> {
  /** `coldsloadGas`: the first access to a slot in a transaction. */
  readonly coldSload: T;
  /** `warmstoragereadGas`: every later access. */
  readonly warmRead: T;
}

/**
 * 0x54 SLOAD's gas (EIP-2929): `coldSload` when the read found the slot cold (and warmed it),
 * `warmRead` when it was warm already.
 */
export function sloadGas<T extends number | bigint>(wasCold: boolean, costs: AccessCosts<T>): T {
  return wasCold ? costs.coldSload : costs.warmRead;
}

/** The costs and refunds of SSTORE (EIP-2200 with EIP-2929's and EIP-3529's values). */
export interface StoreCosts extends AccessCosts<number> {
  readonly sstoreNoop: number;
  readonly sstoreInit: number;
  readonly sstoreClean: number;
  readonly sstoreDirty: number;
  readonly sstoreReset: number;
  readonly sstoreInitRefund: number;
  readonly sstoreCleanRefund: number;
  readonly sstoreClearRefund: number;
}

/**
 * 0x55 SSTORE's gas (EIP-2200) for a write of `value` to a slot that holds `current` and held
 * `original` before the transaction, without the cold access (`coldSload`, EIP-2929) added when
 * the write finds the slot cold. The sentry (no SSTORE with `sstoreSentryEIP2200Gas` or less
 * left) is checked before.
 */
export function sstoreGas(
  original: bigint,
  current: bigint,
  value: bigint,
  costs: StoreCosts,
): number {
  if (current === value) return costs.sstoreNoop;
  if (original === current) return original === 0n ? costs.sstoreInit : costs.sstoreClean;
  return costs.sstoreDirty;
}

/**
 * The refund counter after an SSTORE that changes the slot (`current !== value`), from
 * `refund`, as the library's EIP-2200 handler makes it (its reductions stop at zero), with
 * EIP-2929's refunds for a slot that is warm (`warm`) when restored to its original value.
 */
export function sstoreRefund(
  refund: number,
  original: bigint,
  current: bigint,
  value: bigint,
  warm: boolean,
  costs: StoreCosts,
): number {
  if (original === current) {
    if (original !== 0n && value === 0n) refund += costs.sstoreClearRefund;
  } else {
    if (original !== 0n) {
      if (current === 0n) refund = Math.max(0, refund - costs.sstoreClearRefund);
      else if (value === 0n) refund += costs.sstoreClearRefund;
    }
    if (original === value) {
      if (original === 0n)
        refund += warm ? costs.sstoreInit - costs.warmRead : costs.sstoreInitRefund;
      else
        refund += warm
          ? costs.sstoreReset - costs.coldSload - costs.warmRead
          : costs.sstoreCleanRefund;
    }
  }
  return refund;
}
