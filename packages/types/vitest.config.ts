import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("types", ["test/unit/**/*.test.ts"]);
