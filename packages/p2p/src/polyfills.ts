// Node 20 lacks Promise.withResolvers (Node 22), which libp2p 3 calls. Installed by the
// package's entry before any module of libp2p runs; a no-op where the runtime has it.
interface WithResolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const PromiseCtor = Promise as unknown as { withResolvers?: <T>() => WithResolvers<T> };
if (typeof PromiseCtor.withResolvers !== "function") {
  PromiseCtor.withResolvers = <T>(): WithResolvers<T> => {
    let resolve!: WithResolvers<T>["resolve"];
    let reject!: WithResolvers<T>["reject"];
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

export {};
