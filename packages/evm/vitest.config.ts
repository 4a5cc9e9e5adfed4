import { nodexProject } from "../../vitest.shared.ts";

export default nodexProject("evm", ["test/unit/**/*.test.ts", "test/conformance/**/*.test.ts"]);
