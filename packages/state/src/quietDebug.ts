import createDebug from "debug";

/**
 * ethereumjs makes a `debug` logger for every trie, cache and state manager it builds, and a
 * state is opened for every new head. Each logger asks whether stderr is a terminal (a system
 * call) to choose its colours, which came to a tenth of the cost of opening a state. Its output
 * (`DEBUG=...`) is for ethereumjs's own debugging: after this call it goes without colours
 * unless `DEBUG_COLORS` says otherwise.
 *
 * It changes the `debug` package's options for the whole process, so it is a choice the
 * program makes at start-up (the node does), never a side effect of importing this package.
 */
export function quietLibraryDebug(): void {
  const options = createDebug.inspectOpts;
  if (options !== undefined && !("colors" in options)) options.colors = false;
}
