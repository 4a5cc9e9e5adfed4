import { describe, expect, it } from "vitest";
import { parseHead } from "../../../src/http/wire.js";

const head = (...lines: string[]) => lines.join("\r\n");

describe("parseHead", () => {
  it("reads what the HTTP rules need, field names in any case, values without their spaces", () => {
    const parsed = parseHead(
      head(
        "POST /v1/key?x=1 HTTP/1.1",
        "HOST: 127.0.0.1:4444",
        "content-TYPE: \t application/json; charset=utf-8 \t",
        "Content-Length: 42",
        "Origin: http://localhost:3000",
        "X-Anything: ignored",
      ),
    );
    expect(parsed).toEqual({
      head: {
        method: "POST",
        url: "/v1/key?x=1",
        contentType: "application/json; charset=utf-8",
        origin: "http://localhost:3000",
        contentLength: 42,
        requestHeaders: undefined,
      },
      bodyLength: 42,
      close: false,
    });
  });

  it("takes Access-Control-Request-Headers for a preflight only", () => {
    const asked = "Access-Control-Request-Headers: content-type, x-key";
    expect(parseHead(head("OPTIONS / HTTP/1.1", "Host: x", asked))?.head.requestHeaders).toBe(
      "content-type, x-key",
    );
    expect(parseHead(head("POST / HTTP/1.1", "Host: x", asked))?.head.requestHeaders).toBe(
      undefined,
    );
  });

  it("reads no body without a length, and Connection's close among its options", () => {
    expect(parseHead(head("GET /health HTTP/1.1", "Host: x"))).toMatchObject({
      bodyLength: 0,
      close: false,
    });
    expect(
      parseHead(head("POST / HTTP/1.1", "Host: x", "Connection: keep-alive, Close")),
    ).toMatchObject({ close: true });
  });

  it.each([
    ["HTTP/1.0", head("POST / HTTP/1.0", "Host: x")],
    ["another method", head("PUT / HTTP/1.1", "Host: x")],
    ["a lower-case method", head("post / HTTP/1.1", "Host: x")],
    ["no Host", head("POST / HTTP/1.1", "Content-Length: 0")],
    ["two Hosts", head("POST / HTTP/1.1", "Host: x", "Host: y")],
    ["two lengths", head("POST / HTTP/1.1", "Host: x", "Content-Length: 1", "Content-Length: 1")],
    ["a signed length", head("POST / HTTP/1.1", "Host: x", "Content-Length: +1")],
    [
      "a length of 16 digits",
      head("POST / HTTP/1.1", "Host: x", `Content-Length: ${"9".repeat(16)}`),
    ],
    ["a chunked body", head("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked")],
    ["Expect", head("POST / HTTP/1.1", "Host: x", "Expect: 100-continue")],
    ["an upgrade", head("GET / HTTP/1.1", "Host: x", "Upgrade: websocket")],
    ["Connection: upgrade", head("GET / HTTP/1.1", "Host: x", "Connection: keep-alive, Upgrade")],
    ["two content types", head("POST / HTTP/1.1", "Host: x", "Content-Type: a", "Content-Type: b")],
    ["two origins", head("POST / HTTP/1.1", "Host: x", "Origin: a", "Origin: b")],
    ["an empty field name", head("POST / HTTP/1.1", "Host: x", ": v")],
    ["a line without a colon", head("POST / HTTP/1.1", "Host: x", "nonsense")],
    ["a folded line", head("POST / HTTP/1.1", "Host: x", " folded")],
    ["a bare line feed", head("POST / HTTP/1.1", "Host: x\nX-A: 1")],
    ["a bare carriage return", head("POST / HTTP/1.1", "Host: x\rX-A: 1")],
    ["a NUL in a value", head("POST / HTTP/1.1", "Host: x", "X-A: a\0b")],
    ["a space in the target", head("POST /a b HTTP/1.1", "Host: x")],
    ["a non-ASCII target", head("POST /é HTTP/1.1", "Host: x")],
    ["an empty target", head("POST  HTTP/1.1", "Host: x")],
    ["a request line of two parts", head("POST /", "Host: x")],
  ])("leaves a head with %s to node:http", (_, text) => {
    expect(parseHead(text)).toBeUndefined();
  });

  it("keeps a value's inner spaces and its bytes above ASCII, as node:http does", () => {
    const parsed = parseHead(head("POST / HTTP/1.1", "Host: x", "Origin:  a \u00a0b\u00e9 "));
    expect(parsed?.head.origin).toBe("a \u00a0b\u00e9");
  });
});
