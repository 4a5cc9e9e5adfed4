import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Command, helpText, parseCommandLine, UsageError } from "../../src/index.js";

const tmp = mkdtempSync(join(tmpdir(), "nodex-commands-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function parse(argv: string[], env: Record<string, string> = {}): Command {
  return parseCommandLine({ argv, env, isTTY: false, home: "/home/op", cwd: "/srv" });
}

describe("nodex export and nodex import", () => {
  it("reads export FILE with its range, the network and the datadir", () => {
    const c = parse([
      "export",
      "chain.rlp",
      "--regtest",
      "--datadir",
      "data",
      "--from",
      "5",
      "--to=9",
      "--force",
    ]);
    expect(c).toMatchObject({
      kind: "export",
      file: "/srv/chain.rlp",
      from: 5n,
      to: 9n,
      force: true,
    });
    if (c.kind !== "export") throw new Error("not export");
    expect(c.config.network.name).toBe("regtest");
    expect(c.config.datadir).toBe("/srv/data");
    expect(Object.isFrozen(c)).toBe(true);
  });

  it("defaults the range to the whole chain, no overwrite, and mainnet's datadir", () => {
    const c = parse(["export", "~/out.rlp"]);
    expect(c).toMatchObject({ kind: "export", file: "/home/op/out.rlp", force: false });
    if (c.kind !== "export") throw new Error("not export");
    expect(c.from).toBeUndefined();
    expect(c.to).toBeUndefined();
    expect(c.config.datadir).toBe("/home/op/.nodex/mainnet");
  });

  it("takes the command after options too, and - for standard input or output", () => {
    expect(parse(["--devnet", "import", "-"])).toMatchObject({ kind: "import", file: "-" });
    expect(parse(["export", "-", "--to", "0"])).toMatchObject({
      kind: "export",
      file: "-",
      to: 0n,
    });
  });

  it("reads the node's settings that apply from flags, environment and the config file", () => {
    const file = join(tmp, "node.json");
    // rpcPort and mineInterval are the node's: the commands leave them alone
    writeFileSync(
      file,
      JSON.stringify({ network: "devnet", stateWindow: 16, rpcPort: 1234, mineInterval: 5 }),
    );
    const c = parse(["import", "f.rlp", "--config", file, "--log-format", "pretty"], {
      NODEX_DATADIR: "/var/nodex",
      NODEX_LOG_LEVEL: "debug",
    });
    if (c.kind !== "import") throw new Error("not import");
    expect(c.config.network.name).toBe("devnet");
    expect(c.config.stateWindow).toBe(16);
    expect(c.config.datadir).toBe("/var/nodex");
    expect(c.config.logLevel).toBe("debug");
    expect(c.config.logFormat).toBe("pretty");
    expect(parse(["import", "f", "--archive", "--testnet"])).toMatchObject({
      config: { stateWindow: "all" },
    });
  });

  it("logs warnings and errors only, unless told", () => {
    expect(parse(["import", "f"])).toMatchObject({ config: { logLevel: "warn" } });
    expect(parse(["import", "f", "--log-level", "info"])).toMatchObject({
      config: { logLevel: "info" },
    });
    expect(parse([])).toMatchObject({ config: { logLevel: "info" } });
  });

  it.each([
    [["export"], "nodex export needs a FILE (- for standard output)"],
    [["import", "--regtest"], "nodex import needs a FILE (- for standard input)"],
    [["import", "a", "b"], 'unexpected argument "b"'],
    [["import", ""], "the FILE of nodex import is empty"],
    [["exprot", "f"], 'unexpected argument "exprot"'],
    [["--regtest", "f.rlp"], 'unexpected argument "f.rlp"'],
    [["-"], 'unexpected argument "-"'],
    [["export", "f", "--rpc-port", "1"], "option --rpc-port does not apply to nodex export"],
    [["import", "f", "--mine-interval=2"], "option --mine-interval does not apply to nodex import"],
    [["import", "f", "--api-key", "aaaaaaaa"], "option --api-key does not apply to nodex import"],
    [["import", "f", "--from", "1"], "option --from works with nodex export only"],
    [["import", "f", "--force"], "option --force works with nodex export only"],
    [["--force"], "option --force works with nodex export only"],
    [["export", "f", "--from", "x"], 'invalid value for --from: "x" is not a block number'],
    [["export", "f", "--to", "-1"], 'invalid value for --to: "-1" is not a block number'],
    [["export", "f", "--to=1.5"], 'invalid value for --to: "1.5" is not a block number'],
    [["export", "f", "--from"], "option --from needs a value (N)"],
    [["export", "f", "--force=yes"], "option --force takes no value"],
    [["export", "f", "--from", "9", "--to", "3"], "--from 9 is after --to 3"],
    [
      ["export", "f", "--testnet", "--regtest"],
      "conflicting network options: --testnet and --regtest",
    ],
    [["export", "f", "--bogus"], "unknown option --bogus"],
  ])("rejects %j", (argv, message) => {
    expect(() => parse(argv)).toThrow(new UsageError(message));
  });

  it("answers --help for a command too", () => {
    expect(parse(["export", "--help"]).kind).toBe("help");
  });

  it("lists the commands and their flags in --help", () => {
    const help = helpText();
    expect(help).toContain("nodex export FILE [--from N] [--to M] [--force] [options]");
    expect(help).toContain("nodex import FILE [options]");
    expect(help).toContain("--force");
    expect(help).toContain(
      "The commands take these options of the node: --network, --mainnet, --testnet, --devnet, --regtest, --datadir, --state-window, --archive, --min-difficulty, --secp256k1, --log-level, --log-format, --config.",
    );
  });
});
