import { createCustomCommon, Hardfork, Mainnet } from "@ethereumjs/common";
import { describe, expect, it } from "vitest";
import { commonForEVM } from "../../src/common.js";

describe("commonForEVM", () => {
  it("answers isActivatedEIP as the original does, following hardfork changes", () => {
    const common = createCustomCommon({ chainId: 33 }, Mainnet, { hardfork: Hardfork.Cancun });
    const copy = commonForEVM(common);
    expect(copy).not.toBe(common);
    for (let eip = 0; eip < 8000; eip++)
      expect(copy.isActivatedEIP(eip)).toBe(common.isActivatedEIP(eip));
    expect(copy.isActivatedEIP(1153)).toBe(true);
    copy.setHardfork(Hardfork.London);
    expect(copy.isActivatedEIP(1153)).toBe(false);
    expect(copy.isActivatedEIP(3529)).toBe(true);
    expect(common.isActivatedEIP(1153)).toBe(true);
  });
});
