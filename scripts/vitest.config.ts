import { nodexProject } from "../vitest.shared.ts";

export default nodexProject("scripts", ["test/**/*.test.ts"]);
