// A Hardhat 2 project as its users write it: hardhat-ethers, the chai matchers and the network
// helpers. `--network nodex` runs it against a Nodex node (NODEX_URL, default the node of
// `npm start`); `--network hardhat` against Hardhat's own in-process network.
require("@nomicfoundation/hardhat-ethers");
require("@nomicfoundation/hardhat-chai-matchers");
const { subtask } = require("hardhat/config");
const { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } = require("hardhat/builtin-tasks/task-names");

const solcVersion = require("solc/package.json").version;

// Compile with the solc npm package (solcjs) instead of a compiler Hardhat downloads: CI has no
// access to the compiler list.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args, _hre, runSuper) => {
  if (args.solcVersion !== solcVersion) return runSuper(args);
  const solc = require("solc");
  return {
    compilerPath: require.resolve("solc/soljson.js"),
    isSolcJs: true,
    version: solcVersion,
    longVersion: solc.version().replace(/\.Emscripten\.clang$/, ""),
  };
});

// MOCHA_JSON=<file>: mocha's JSON reporter, written to that file (the vitest side reads it).
const mochaJSON = process.env.MOCHA_JSON;

/** @type {import("hardhat/config").HardhatUserConfig} */
module.exports = {
  solidity: {
    version: solcVersion,
    settings: { evmVersion: "cancun", optimizer: { enabled: true, runs: 200 } },
  },
  networks: {
    hardhat: { hardfork: "cancun" },
    nodex: { url: process.env.NODEX_URL ?? "http://127.0.0.1:4444" },
    localhost: { url: process.env.LOCALHOST_URL ?? "http://127.0.0.1:8545" },
  },
  mocha: {
    timeout: 30_000,
    ...(mochaJSON ? { reporter: "json", reporterOption: { output: mochaJSON } } : {}),
  },
};
