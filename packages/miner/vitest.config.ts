import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("miner", ["test/unit/**/*.test.ts"]);
