/**
 * What a fork source needs of the node it forks from: JSON-RPC calls, answered with the
 * result's JSON value (an error thrown as the client reports it: unreachable, timed out, an
 * error answer), and a name for messages. The HTTP client (batching, retries, failover) lives
 * elsewhere and implements it; the state package depends on nothing more.
 */
export interface UpstreamCalls {
  call(method: string, params: unknown[]): Promise<unknown>;
  /** Names the upstream in errors (its URL without credentials, say). */
  describe(): string;
}
