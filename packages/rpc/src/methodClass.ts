/** Classes of methods with a time budget of their own. */
export type MethodClass = "call" | "logs" | "trace";

/** The methods of each class with a time budget. */
export function methodClass(method: string): MethodClass | undefined {
  if (method === "eth_call" || method === "eth_estimateGas" || method === "eth_createAccessList")
    return "call";
  if (
    method === "eth_getLogs" ||
    method === "eth_getFilterLogs" ||
    method === "eth_getFilterChanges"
  )
    return "logs";
  if (method.startsWith("debug_trace") || method.startsWith("trace_")) return "trace";
  return undefined;
}
