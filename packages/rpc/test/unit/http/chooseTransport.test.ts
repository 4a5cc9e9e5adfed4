import { describe, expect, it } from "vitest";
import { chooseTransport } from "../../../src/http/index.js";
import { createNodeHttpTransport } from "../../../src/http/nodeHttp.js";
import { HTTP_LAYERS } from "../../../src/index.js";

describe("chooseTransport", () => {
  it("accepts node and auto, its alias", () => {
    expect(HTTP_LAYERS).toEqual(["auto", "node"]);
  });

  it.each(HTTP_LAYERS)("serves %s with Node's own layer", (layer) => {
    const chosen = chooseTransport(layer);
    expect(chosen.layer).toBe("node");
    expect(chosen.factory).toBe(createNodeHttpTransport);
  });
});
