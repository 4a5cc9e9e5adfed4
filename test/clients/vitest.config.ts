import { nodexProject } from "../../vitest.shared.ts";

// Each file starts its own nodex; the Hardhat file runs the whole mocha suite while it is
// collected, so its cases only read the report.
export default nodexProject("clients", ["test/**/*.test.ts"], { timeoutMs: 60_000 });
