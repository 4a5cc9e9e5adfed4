import { type Logger, nullLogger } from "@nodex/types";
import { describe, expect, it } from "vitest";
import {
  availableHttpLayers,
  chooseTransport,
  HttpLayerUnavailableError,
} from "../../../src/http/index.js";
import { createNodeHttpTransport } from "../../../src/http/nodeHttp.js";
import { loadUws, type UwsModule } from "../../../src/http/uws.js";

const missing = () => ({ error: "no usable uws_linux_x64_127.node" });
const present = () => ({ uws: {} as UwsModule });

function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger: Logger = { ...nullLogger, warn: (msg) => warnings.push(msg) };
  return { logger, warnings };
}

describe("chooseTransport", () => {
  it("serves node:http when told, without loading uWebSockets.js", () => {
    let loads = 0;
    const chosen = chooseTransport("node", nullLogger, () => {
      loads++;
      return missing();
    });
    expect(chosen).toEqual({ layer: "node", factory: createNodeHttpTransport });
    expect(loads).toBe(0);
  });

  it("takes uWebSockets.js where it loads, named or automatic", () => {
    expect(chooseTransport("uws", nullLogger, present).layer).toBe("uws");
    expect(chooseTransport("auto", nullLogger, present).layer).toBe("uws");
  });

  it("falls back to node:http with a warning when the choice is automatic", () => {
    const { logger, warnings } = recordingLogger();
    const chosen = chooseTransport("auto", logger, missing);
    expect(chosen).toEqual({ layer: "node", factory: createNodeHttpTransport });
    expect(warnings).toEqual([
      "uWebSockets.js is not available on this Node version; serving HTTP with node:http",
    ]);
  });

  it("refuses uws named explicitly where it cannot load, naming the layers that can", () => {
    const { logger, warnings } = recordingLogger();
    let thrown: unknown;
    try {
      chooseTransport("uws", logger, missing);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(HttpLayerUnavailableError);
    const message = (thrown as Error).message;
    expect(message).toContain(`not available on Node ${process.version}`);
    expect(message).toContain("no usable uws_linux_x64_127.node");
    expect(message).toContain("HTTP layers available here: auto, node");
    expect(warnings).toEqual([]);
  });

  it("lists the layers that can be chosen", () => {
    expect(availableHttpLayers(present)).toEqual(["auto", "uws", "node"]);
    expect(availableHttpLayers(missing)).toEqual(["auto", "node"]);
  });
});

describe("loadUws", () => {
  // The package ships binaries for Node 16, 18 and 20 (ABI 93, 108, 115) only.
  const shipped = ["93", "108", "115"].includes(process.versions.modules);

  it(`${shipped ? "loads" : "does not load"} on Node ${process.version}`, () => {
    const loaded = loadUws();
    if (shipped) expect(loaded).toHaveProperty("uws");
    else expect(loaded).toEqual({ error: expect.stringContaining(process.versions.modules) });
  });
});
