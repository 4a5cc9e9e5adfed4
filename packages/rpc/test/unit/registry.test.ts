import { describe, expect, it } from "vitest";
import {
  defineModule,
  MethodRegistry,
  method,
  p,
  type RegisteredMethod,
  RPCError,
  r,
} from "../../src/index.js";

const evm = defineModule("evm", {
  mine: method({ params: [], result: r.string, handler: () => "mined" }),
});
const eth = defineModule("eth", {
  chainId: method({ params: [], result: r.quantity, handler: () => 1 }),
  echo: method({
    params: [p.quantity, p.optional(p.boolean, false)],
    result: r.json,
    handler: (_s, a) => a,
  }),
});

describe("MethodRegistry", () => {
  it("serves the methods of enabled modules", () => {
    const reg = new MethodRegistry([eth, evm], {
      enabled: new Set(["eth", "evm"]),
      hostedOff: new Set(),
    });
    expect(reg.methodNames()).toEqual(["eth_chainId", "eth_echo", "evm_mine"]);
    expect(reg.enabledModules()).toEqual(["eth", "evm"]);
    const found = reg.lookup("evm_mine");
    expect(found).not.toBeInstanceOf(RPCError);
  });

  it("says a method of a disabled module is not enabled", () => {
    const reg = new MethodRegistry([eth, evm], { enabled: new Set(["eth"]), hostedOff: new Set() });
    const found = reg.lookup("evm_mine") as RPCError;
    expect(found).toBeInstanceOf(RPCError);
    expect(found.code).toBe(-32601);
    expect(found.message).toBe(
      "the method evm_mine is not available: the evm module is not enabled on this node",
    );
  });

  it("says a module is off in hosted mode, even when enabled (unless a key lifts it)", () => {
    const reg = new MethodRegistry([eth, evm], {
      enabled: new Set(["eth", "evm"]),
      hostedOff: new Set(["evm"]),
    });
    const found = reg.lookup("evm_mine") as RegisteredMethod;
    expect(found.name).toBe("evm_mine");
    expect(found.hostedOff?.message).toBe(
      "the method evm_mine is not available: the evm module is disabled in hosted mode",
    );
    expect(reg.enabledModules()).toEqual(["eth"]);
    expect(reg.methodNames()).not.toContain("evm_mine");
  });

  it("says why the methods of an enabled but unavailable module cannot run", () => {
    const sco = defineModule(
      "sco",
      { peerList: method({ params: [], result: r.json, handler: () => [] }) },
      { unavailable: "the peer-to-peer network is off on this node (--no-p2p)" },
    );
    const on = new MethodRegistry([eth, sco], {
      enabled: new Set(["eth", "sco"]),
      hostedOff: new Set(),
    });
    const found = on.lookup("sco_peerList") as RPCError;
    expect(found).toBeInstanceOf(RPCError);
    expect(found.code).toBe(-32601);
    expect(found.message).toBe(
      "the method sco_peerList is not available: the peer-to-peer network is off on this node (--no-p2p)",
    );
    expect(on.methodNames()).toEqual(["eth_chainId", "eth_echo"]);
    expect(on.enabledModules()).toEqual(["eth"]);
    // Not enabled at all: that reason comes first.
    const off = new MethodRegistry([eth, sco], { enabled: new Set(["eth"]), hostedOff: new Set() });
    expect((off.lookup("sco_peerList") as RPCError).message).toBe(
      "the method sco_peerList is not available: the sco module is not enabled on this node",
    );
  });

  it("tells unknown from unsupported methods", () => {
    const reg = new MethodRegistry([eth], { enabled: new Set(["eth"]), hostedOff: new Set() });
    expect((reg.lookup("eth_nope") as RPCError).message).toBe(
      "the method eth_nope does not exist/is not available",
    );
    expect((reg.lookup("shh_newIdentity") as RPCError).message).toBe(
      "the method shh_newIdentity is not supported: the whisper protocol is not supported",
    );
    expect((reg.lookup("constructor") as RPCError).code).toBe(-32601);
    expect((reg.lookup("__proto__") as RPCError).code).toBe(-32601);
  });

  it("refuses a method declared twice", () => {
    expect(
      () => new MethodRegistry([eth, eth], { enabled: new Set(["eth"]), hostedOff: new Set() }),
    ).toThrow("method eth_chainId is declared twice");
  });
});
