// Hardhat 2 project for bench/trace/compare.mjs: Cancun, as Nodex runs, and the default accounts.
/** @type {import('hardhat/config').HardhatUserConfig} */
module.exports = {
  networks: { hardhat: { chainId: 31337, hardfork: "cancun" } },
};
