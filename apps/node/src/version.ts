import { readFileSync } from "node:fs";
import { arch, platform } from "node:os";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string;
};

/** The version of this build of nodex. */
export const NODEX_VERSION: string = pkg.version;

/** `web3_clientVersion`: `Nodex/v<version>/<os>-<arch>/node<version>`. */
export function clientVersion(): string {
  return `Nodex/v${NODEX_VERSION}/${platform()}-${arch()}/node${process.versions.node}`;
}
