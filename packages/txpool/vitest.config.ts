import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("txpool", ["test/unit/**/*.test.ts"]);
