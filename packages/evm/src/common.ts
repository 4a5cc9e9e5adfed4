import type { Common } from "@ethereumjs/common";

interface CommonInternals {
  _activatedEIPsCache: number[];
}

const sets = new WeakMap<number[], Set<number>>();

/**
 * `Common.isActivatedEIP` scans an array of some sixty EIPs, and the EVM asks it dozens of times
 * per message. This answers from a set built from that same array: the array is replaced (not
 * changed in place) when the hardfork or the EIPs change, so a new array gets a new set.
 */
function isActivatedEIP(this: Common, eip: number): boolean {
  const list = (this as unknown as CommonInternals)._activatedEIPsCache;
  // Every EVM's copy has the same list until a hardfork changes: the last one answers first.
  if (list !== lastList) {
    let set = sets.get(list);
    if (set === undefined) {
      set = new Set(list);
      sets.set(list, set);
    }
    lastList = list;
    lastSet = set;
  }
  return lastSet.has(eip);
}

let lastList: number[] | undefined;
let lastSet = new Set<number>();

/**
 * A copy of `common` for one EVM. Each EVM subscribes to its Common's `hardforkChanged` events
 * and never unsubscribes, so EVMs sharing one Common stay reachable from it (with their state
 * managers and caches) for as long as it lives; with a copy each, an EVM is freed with its
 * state. The copy answers `isActivatedEIP` from a set.
 */
export function commonForEVM(common: Common): Common {
  const copy = common.copy();
  if (Array.isArray((copy as unknown as Partial<CommonInternals>)._activatedEIPsCache))
    copy.isActivatedEIP = isActivatedEIP;
  return copy;
}
