import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("state", ["test/unit/**/*.test.ts", "test/fork/**/*.test.ts"]);
