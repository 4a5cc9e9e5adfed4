import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { P2PErrorCode } from "../../src/errors.js";
import { NODE_KEY_FILE, NodeKey } from "../../src/nodeKey.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "nodex-p2p-key-"));
  dirs.push(dir);
  return dir;
}

const posix = process.platform !== "win32";

describe("NodeKey", () => {
  it("creates a key file of mode 600 and reads the same key back", async () => {
    const dir = join(tempDir(), "datadir");
    const created = await NodeKey.loadOrCreate(dir);
    const path = join(dir, NODE_KEY_FILE);
    expect(created.path).toBe(path);
    if (posix) expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(created.id).toMatch(/^12D3KooW/);
    const again = await NodeKey.loadOrCreate(dir);
    expect(again.id).toBe(created.id);
    expect(again.peerId.equals(created.peerId)).toBe(true);
    expect(readFileSync(path, "utf8")).toMatch(/^[0-9a-f]+\n$/);
  });

  it("gives one key to loads racing on a new directory", async () => {
    const dir = tempDir();
    const keys = await Promise.all([1, 2, 3, 4].map(() => NodeKey.loadOrCreate(dir)));
    expect(new Set(keys.map((k) => k.id)).size).toBe(1);
    expect((await NodeKey.loadOrCreate(dir)).id).toBe(keys[0]!.id);
  });

  it("gives a new key per directory and per ephemeral key", async () => {
    const a = await NodeKey.loadOrCreate(tempDir());
    const b = await NodeKey.loadOrCreate(tempDir());
    const c = await NodeKey.ephemeral();
    expect(new Set([a.id, b.id, c.id]).size).toBe(3);
    expect(c.path).toBeUndefined();
  });

  it.runIf(posix)("refuses a key file that others may read, naming the mode", async () => {
    const dir = tempDir();
    await NodeKey.loadOrCreate(dir);
    const path = join(dir, NODE_KEY_FILE);
    chmodSync(path, 0o644);
    await expect(NodeKey.loadOrCreate(dir)).rejects.toMatchObject({
      code: P2PErrorCode.KEY_PERMISSIONS,
      message: expect.stringContaining("mode 644"),
    });
    chmodSync(path, 0o640);
    await expect(NodeKey.loadOrCreate(dir)).rejects.toMatchObject({
      code: P2PErrorCode.KEY_PERMISSIONS,
    });
  });

  it("refuses a corrupt key file and leaves it in place", async () => {
    const dir = tempDir();
    const path = join(dir, NODE_KEY_FILE);
    for (const text of ["", "not hex\n", "abcd\n"]) {
      writeFileSync(path, text, { mode: 0o600 });
      chmodSync(path, 0o600);
      await expect(NodeKey.loadOrCreate(dir)).rejects.toMatchObject({
        code: P2PErrorCode.KEY_CORRUPT,
        message: expect.stringContaining(path),
      });
      expect(readFileSync(path, "utf8")).toBe(text);
    }
  });
});
