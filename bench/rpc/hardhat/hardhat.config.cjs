// Minimal Hardhat 2 project for `hardhat node` in the RPC bench: no sources, no plugins.
/** @type {import('hardhat/config').HardhatUserConfig} */
module.exports = {
  networks: { hardhat: { chainId: 31337 } },
};
