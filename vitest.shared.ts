import { defineProject } from "vitest/config";

/**
 * The per-package test project. Unit tests import sibling packages through the
 * `@nodex/source` export condition, so they run against `src/` without a build;
 * e2e tests start the built `nodex` binary.
 */
export function nodexProject(name: string, include: string[], extra: { timeoutMs?: number } = {}) {
  return defineProject({
    resolve: { conditions: ["@nodex/source"] },
    ssr: { resolve: { conditions: ["@nodex/source"] } },
    test: {
      name,
      include,
      environment: "node",
      testTimeout: extra.timeoutMs ?? 10_000,
      hookTimeout: extra.timeoutMs ?? 10_000,
    },
  });
}
