import { StateError, StateErrorCode } from "../errors.js";

/** An upstream URL ready for `fetch`, with the form of it that may be shown. */
export interface Endpoint {
  /** The URL without its userinfo (`fetch` refuses URLs with credentials). */
  readonly href: string;
  /** `Authorization` header carrying the URL's userinfo as Basic credentials, if it had any. */
  readonly authorization: string | undefined;
  /** What logs, errors and stats show: see `redactUrl`. */
  readonly shown: string;
}

/**
 * A path segment this long made of key characters is taken for an API key: hosted providers
 * put theirs in the path (`/v3/<key>`, `/v2/<key>`) as often as in the query string.
 */
const KEY_SEGMENT = /^[A-Za-z0-9_-]{20,}$/;

/**
 * The URL as it may appear in a log or an error: scheme, host, port and path; userinfo, query
 * string and fragment dropped, and any path segment that looks like an API key replaced by
 * `***`. A string that is not a URL is shown as `<invalid URL>` (it may be a key itself).
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "<invalid URL>";
  }
  const path = parsed.pathname
    .split("/")
    .map((segment) => (KEY_SEGMENT.test(segment) ? "***" : segment))
    .join("/");
  return `${parsed.protocol}//${parsed.host}${path}`;
}

/** Parses one upstream URL (http or https); `STATE_UPSTREAM_INVALID_OPTIONS` otherwise. */
export function parseEndpoint(url: string): Endpoint {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(`upstream URL ${redactUrl(url)} is not a URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw invalid(`upstream URL ${redactUrl(url)} is not http or https`);
  }
  let authorization: string | undefined;
  if (parsed.username !== "" || parsed.password !== "") {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    parsed.username = "";
    parsed.password = "";
  }
  parsed.hash = "";
  return { href: parsed.href, authorization, shown: redactUrl(url) };
}

function invalid(message: string): StateError {
  return new StateError(StateErrorCode.UPSTREAM_INVALID_OPTIONS, message);
}
