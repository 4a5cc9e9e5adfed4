import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("chain", ["test/unit/**/*.test.ts"]);
