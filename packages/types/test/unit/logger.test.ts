import { describe, expect, it } from "vitest";
import { LOG_LEVELS, type Logger, nullLogger } from "../../src/index.js";

describe("LOG_LEVELS", () => {
  it("lists the levels from most to least severe", () => {
    expect(LOG_LEVELS).toEqual(["error", "warn", "info", "debug", "trace"]);
    expect(Object.isFrozen(LOG_LEVELS)).toBe(true);
  });
});

describe("nullLogger", () => {
  it("discards every level and enables none", () => {
    for (const level of LOG_LEVELS) {
      expect(nullLogger[level]("message", { a: 1 })).toBeUndefined();
      expect(nullLogger.isLevelEnabled(level)).toBe(false);
    }
  });

  it("has children that are null loggers too", () => {
    const child: Logger = nullLogger.child({ module: "chain" });
    expect(child).toBe(nullLogger);
    expect(child.child({ peer: "x" }).isLevelEnabled("error")).toBe(false);
  });

  it("cannot be changed by a caller", () => {
    expect(Object.isFrozen(nullLogger)).toBe(true);
  });
});
