import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("node", ["test/**/*.test.ts"], { timeoutMs: 30_000 });
