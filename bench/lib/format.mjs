// Output helpers shared by the benches: log lines, number formats, plain-text tables.
import { readFileSync } from "node:fs";

export function log(line) {
  process.stdout.write(`${line}\n`);
}
export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
export function lastLines(text, n) {
  return text
    .trimEnd()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(-n)
    .join("\n");
}
export function firstLines(text, n) {
  return String(text ?? "")
    .trim()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(0, n)
    .join(" | ");
}
export function indent(text, pad) {
  return text
    .split("\n")
    .map((l) => pad + l)
    .join("\n");
}
const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, "g");

export function readTail(file, n) {
  try {
    // Strip ANSI colours (Hardhat).
    return lastLines(readFileSync(file, "utf8").replace(ANSI_ESCAPE, ""), n);
  } catch {
    return "";
  }
}

export function fmtInt(n) {
  return n === undefined || n === null ? "—" : Math.round(n).toLocaleString("en-US");
}
export function fmtK(n) {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(Math.round(n));
}
export function fmtMs(n) {
  if (n === undefined || n === null) return "—";
  return n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0);
}
export function fmtRatio(a, b) {
  if (!a || !b) return "—";
  const r = a / b;
  return `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}

export function table(headers, rows, align) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells
      .map((c, i) =>
        align[i] === "r" ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]),
      )
      .join("  ")
      .trimEnd();
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
