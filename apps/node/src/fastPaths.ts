import { quietLibraryDebug, useFastRlp } from "@nodex/state";

/**
 * The process-wide choices the node makes before it opens anything, in its main thread and in
 * each worker thread (a thread has modules of its own): the one-pass RLP codec in ethereumjs's
 * `RLP` object, and `debug` loggers that do not probe the terminal. Importing the packages
 * changes neither; a program that embeds them makes the same calls if it wants the same.
 */
export function enableFastPaths(): void {
  useFastRlp();
  quietLibraryDebug();
}
