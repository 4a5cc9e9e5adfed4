import { CodecError } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { parseLogFilter } from "../../src/logFilter.js";

const A = `0x${"11".repeat(20)}`;
const H = `0x${"22".repeat(32)}`;

function thrown(filter: unknown): string {
  try {
    parseLogFilter(filter, 0);
  } catch (err) {
    expect(err).toBeInstanceOf(CodecError);
    return (err as Error).message;
  }
  throw new Error("did not throw");
}

describe("parseLogFilter", () => {
  it.each([
    [{ address: 1 }, "address: expected a hex string, got number"],
    [{ address: "0x12" }, "address: hex string has length 2, want 40 for address"],
    [{ address: [A, 1] }, "address[1]: expected a hex string, got number"],
    [{ address: [A, A, "0x11"] }, "address[2]: hex string has length 2, want 40 for address"],
    [
      { topics: [H, `0x${"22".repeat(31)}`] },
      "topics[1]: hex string has length 62, want 64 for hash",
    ],
    [{ topics: [[H, 1]] }, "topics[0][1]: expected a hex string, got number"],
    [{ topics: [null, [[H]]] }, "topics[1][0]: expected a hex string, got array"],
    [{ topics: [{}] }, "topics[0]: expected a hex string, got object"],
    [{ topics: [H, H, H, H, H] }, "topics: at most 4 positions"],
    [{ blockHash: H, toBlock: "latest" }, "cannot specify both blockHash and fromBlock/toBlock"],
    [{ fromBlock: 1 }, "fromBlock: expected a block number or tag, got number"],
    [{ foo: 1 }, 'unknown filter field "foo"'],
  ])("refuses %j, saying where and why", (filter, reason) => {
    expect(thrown(filter)).toBe(`invalid argument 0: ${reason}`);
  });

  it("reads topic positions: null and [] match anything, a list matches any of its topics", () => {
    const h = new Uint8Array(32).fill(0x22);
    expect(parseLogFilter({ topics: [null, [], H, [H, H]] }, 0).topics).toEqual([
      null,
      null,
      [h],
      [h, h],
    ]);
    expect(parseLogFilter({ address: [A, A] }, 0).addresses).toHaveLength(2);
  });
});
