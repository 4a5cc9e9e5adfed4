import { CodecError } from "@nodex/types";
import { RPCError, RPCErrorCode } from "../errors.js";
import { jsonType } from "../json.js";
import { parseLogFilter } from "../logFilter.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { CallContext, SubscriptionHost, SubscriptionRequest } from "../services.js";
import { SUBSCRIPTION_ALIASES } from "../subscriptions.js";

/** The kind's options, decoded once the kind is known. */
const options = {
  name: "options",
  optional: true,
  defaultValue: undefined,
  parse: (value: unknown) => value,
};

const KINDS = Object.keys(SUBSCRIPTION_ALIASES).join(", ");

function connectionOf(ctx: CallContext): SubscriptionHost {
  if (ctx.connection === undefined) {
    throw new RPCError(
      RPCErrorCode.METHOD_NOT_FOUND,
      "notifications not supported: subscribe over a WebSocket connection (ws:// on the RPC port)",
    );
  }
  return ctx.connection;
}

function request(kindName: string, opts: unknown): SubscriptionRequest {
  const kind = SUBSCRIPTION_ALIASES[kindName];
  if (kind === undefined)
    throw new CodecError(
      0,
      `unknown subscription ${JSON.stringify(kindName)}: expected one of ${KINDS}`,
    );
  switch (kind) {
    case "logs":
      return {
        kind,
        query:
          opts === undefined
            ? { range: { from: LATEST, to: LATEST }, addresses: [], topics: [] }
            : parseLogFilter(opts, 1, false),
      };
    case "newPendingTransactions":
      if (opts !== undefined && typeof opts !== "boolean")
        throw new CodecError(
          1,
          `expected a boolean (true: full transactions), got ${jsonType(opts)}`,
        );
      return { kind, fullTransactions: opts === true };
    default:
      if (opts !== undefined)
        throw new CodecError(1, `${kindName} takes no options, got ${jsonType(opts)}`);
      return { kind };
  }
}

const LATEST = { kind: "tag", tag: "latest" } as const;

/**
 * `eth_subscribe` and `eth_unsubscribe`: served on WebSocket connections; over HTTP they
 * answer -32601 `notifications not supported`, as geth does.
 */
export const subscribeModule = defineModule("eth", {
  subscribe: method({
    params: [p.string, options],
    result: r.string,
    handler: (_s, [kind, opts], ctx) => {
      const connection = connectionOf(ctx);
      return connection.subscribe(request(kind, opts));
    },
  }),
  unsubscribe: method({
    params: [p.string],
    result: r.boolean,
    handler: (_s, [id], ctx) => connectionOf(ctx).unsubscribe(id),
  }),
});
