// Hardhat 2 project for `hardhat node --fork` in the fork bench: no sources, no plugins. The fork
// cache (`<cache>/hardhat-network-fork`, used when the fork block is pinned) goes where the bench
// says, in its temp folder, so that a cold run starts empty and the warm run finds it.
/** @type {import('hardhat/config').HardhatUserConfig} */
module.exports = {
  networks: { hardhat: { chainId: 31337 } },
  paths: { cache: process.env.NODEX_BENCH_HARDHAT_CACHE || "cache" },
};
