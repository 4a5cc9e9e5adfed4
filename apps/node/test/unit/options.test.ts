import { NodexError } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { COMMANDS, OPTIONS, OptionError, OptionErrorCode } from "../../src/options.js";

function parser(flag: string) {
  const option = OPTIONS.find((o) => o.flag === flag);
  if (option === undefined) throw new Error(`no option ${flag}`);
  return option.parse;
}

function refusal(parse: () => unknown): OptionError {
  try {
    parse();
  } catch (err) {
    expect(err).toBeInstanceOf(OptionError);
    expect(err).toBeInstanceOf(NodexError);
    return err as OptionError;
  }
  throw new Error("the parser accepted the text");
}

describe("option parsers", () => {
  it.each([
    ["--rpc-port", "-1", '"-1" is not a port number (0-65535)'],
    ["--network", "main", '"main" is not one of mainnet, testnet, devnet, regtest'],
    ["--coinbase", "0x12", '"0x12" is not a 20-byte 0x-prefixed hex address'],
    ["--datadir", " ", "the directory is empty"],
  ])("refuse %s %j with a coded error and the reason as its message", (flag, text, message) => {
    const err = refusal(() => parser(flag)(text));
    expect(err.code).toBe(OptionErrorCode.INVALID_VALUE);
    expect(err.message).toBe(message);
    expect(err.meta).toEqual({ text });
  });

  it("tell a number out of range from one that is not a number", () => {
    const err = refusal(() => parser("--rpc-port")("65536"));
    expect(err.code).toBe("OPTION_OUT_OF_RANGE");
    expect(err.message).toBe("65536 is out of range for a port number (0-65535)");
    expect(err.meta).toEqual({ text: "65536", min: 0, max: 65535 });
  });

  it("keep an API key out of the error's context", () => {
    const err = refusal(() => parser("--api-key")("short"));
    expect(err.code).toBe(OptionErrorCode.INVALID_VALUE);
    expect(err.message).toBe("an API key is 8-128 characters of A-Z, a-z, 0-9, _ and -");
    expect(JSON.stringify(err.meta)).not.toContain("short");
  });

  it("refuse a command's block number with a coded error", () => {
    const from = COMMANDS.find((c) => c.name === "export")!.options.find(
      (o) => o.flag === "--from",
    );
    const err = refusal(() => from!.parse!("x"));
    expect(err.code).toBe(OptionErrorCode.INVALID_VALUE);
    expect(err.message).toBe('"x" is not a block number');
  });
});
