import { AccessListTracer, type CallRequest, gethError } from "@nodex/evm";
import { type AccessListEntry, type BlockSelector, bytesToHex, encodeQuantity } from "@nodex/types";
import { accessListBytes, checkCallGas, parseAccessList, parseCallObject } from "../callObject.js";
import type { ParamSpec } from "../params.js";
import type { ChainReaderService } from "../services.js";

/** A call object and the access list it carries (`[]` when none). */
export interface CallWithAccessList {
  readonly req: CallRequest;
  readonly accessList: readonly AccessListEntry[];
}

/** `eth_createAccessList`'s call object: `eth_call`'s, its `accessList` kept as a list too. */
export const callWithAccessList: ParamSpec<CallWithAccessList> = {
  name: "call",
  optional: false,
  defaultValue: undefined as unknown as CallWithAccessList,
  parse: (value, arg) => {
    const req = parseCallObject(value, arg);
    const raw = (value as Record<string, unknown>).accessList;
    const accessList = raw === undefined || raw === null ? [] : parseAccessList(raw, arg);
    return { req, accessList };
  },
};

/** Rounds of tracing before the list is taken as it is (geth loops until it stops changing). */
const MAX_ROUNDS = 8;

function sameList(a: readonly AccessListEntry[], b: readonly AccessListEntry[]): boolean {
  const text = (list: readonly AccessListEntry[]) =>
    list
      .map((e) => `${bytesToHex(e.address)}:${e.storageKeys.map(bytesToHex).join(",")}`)
      .join(";");
  return text(a) === text(b);
}

/**
 * `eth_createAccessList`, as geth answers it: the call traced (`AccessListTracer`: the slots it
 * touches and the accounts it names, but the sender's, the recipient's and the precompiles'
 * without slots), then again with the list it found until that list stops changing;
 * `{accessList, gasUsed}`, and `error` (geth's words) when the call fails. `gasUsed` is what a
 * typed transaction with that list uses: its intrinsic gas counts 80 gas for each byte of the
 * list's RLP (RSKIP546; the list warms nothing, so the run is the same as without it), the
 * refund taken off. Where typed transactions do not exist (`typed` false), a legacy
 * transaction's gas: no list.
 */
export async function createAccessList(
  reader: Pick<ChainReaderService, "traceCall">,
  { req, accessList }: CallWithAccessList,
  selector: BlockSelector,
  typed: boolean,
): Promise<Record<string, unknown>> {
  let list: readonly AccessListEntry[] = accessList;
  for (let round = 0; ; round++) {
    const bytes = typed ? accessListBytes(list) : 0;
    const sized = Object.assign({}, req, { accessListBytes: bytes });
    checkCallGas(sized);
    const { outcome, tracer } = await reader.traceCall(
      sized,
      selector,
      new AccessListTracer({ initial: accessList }),
    );
    const found = tracer.result();
    if (sameList(found, list) || round + 1 === MAX_ROUNDS) {
      const json: Record<string, unknown> = {
        accessList: found.map((e) => ({
          address: bytesToHex(e.address),
          storageKeys: e.storageKeys.map(bytesToHex),
        })),
        gasUsed: encodeQuantity(outcome.gasUsed),
      };
      if (!outcome.success) json.error = gethError(outcome.error ?? "execution failed");
      return json;
    }
    list = found;
  }
}
