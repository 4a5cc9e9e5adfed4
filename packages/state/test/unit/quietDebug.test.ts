import createDebug from "debug";
import { describe, expect, it } from "vitest";
import { quietLibraryDebug } from "../../src/index.js";

describe("quietLibraryDebug", () => {
  it("is a choice: importing the package leaves debug's options alone, the call turns colours off", () => {
    const options = createDebug.inspectOpts as { colors?: unknown };
    const given = "DEBUG_COLORS" in process.env;
    expect("colors" in options).toBe(given);
    quietLibraryDebug();
    expect(options.colors).toBe(given ? options.colors : false);
  });
});
