import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * Test files run side by side, one per worker. Vitest's default is a worker per core but one,
 * so that on two cores files ran one at a time: an end-to-end file spends most of its time
 * waiting for the `nodex` processes it starts (each of which takes a core while it loads), and
 * the second core was mostly idle. Two workers at least, then the default.
 */
const cores = availableParallelism();
const maxWorkers = Math.max(Math.min(cores, 2), cores - 1);

export default defineConfig({
  test: {
    maxWorkers,
    projects: [
      "packages/*/vitest.config.ts",
      "apps/*/vitest.config.ts",
      "scripts/vitest.config.ts",
      "test/clients/vitest.config.ts",
    ],
  },
});
