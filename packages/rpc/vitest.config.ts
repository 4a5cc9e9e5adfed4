import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("rpc", ["test/unit/**/*.test.ts"]);
