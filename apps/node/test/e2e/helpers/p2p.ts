import { call, type RunningNode } from "./node.js";

/** The node's peer-to-peer address with its peer id, from its start-up log. */
export function p2pAddress(node: RunningNode): string {
  const line = node
    .logs()
    .split("\n")
    .find((l) => l.includes('"msg":"P2P listening"'));
  if (line === undefined) throw new Error(`no "P2P listening" line in:\n${node.logs()}`);
  return (JSON.parse(line) as { addresses: string[] }).addresses[0]!;
}

/** A method's result; throws with the error when it answers one. */
export async function rpc(
  node: RunningNode,
  method: string,
  params: unknown[] = [],
): Promise<unknown> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method} answered ${JSON.stringify(res.error)}`);
  return res.result;
}

/** Polls `probe` until it gives a value; fails after `ms` naming what it waited for. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
