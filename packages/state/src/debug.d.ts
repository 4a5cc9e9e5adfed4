// The part of the `debug` package (used by ethereumjs) that `quietDebug.ts` touches.
declare module "debug" {
  const createDebug: { inspectOpts?: Record<string, unknown> };
  export default createDebug;
}
