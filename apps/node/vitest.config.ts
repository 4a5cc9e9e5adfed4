import { nodexProject } from "../../vitest.shared.ts";

// 60 s a test or hook by default: an end-to-end file shares the machine's cores with the other
// file that runs beside it (two workers at least, see ../../vitest.config.ts), and its nodes
// start more slowly on a busy machine; a limit is for a test that hangs, never a measure.
export default nodexProject("node", ["test/**/*.test.ts"], { timeoutMs: 60_000 });
