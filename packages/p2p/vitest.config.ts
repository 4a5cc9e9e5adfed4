import { mergeConfig } from "vitest/config";
import { nodexProject } from "../../vitest.shared.ts";

// libp2p 3 calls Promise.withResolvers, which Node 20 lacks: the setup file installs it first.
export default mergeConfig(nodexProject("p2p", ["test/unit/**/*.test.ts"], { timeoutMs: 20_000 }), {
  test: { setupFiles: ["./test/setup.ts"] },
});
