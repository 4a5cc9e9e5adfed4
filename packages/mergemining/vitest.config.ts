import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("mergemining", ["test/unit/**/*.test.ts"]);
