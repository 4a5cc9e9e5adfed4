// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./ERC20.sol";

/// evm-bench's erc20.mint: 5,000 mints to one holder.
contract ERC20Mint is ERC20 {
    /// Mints `first`, `first + 1`, … to `to`; answers the total supply.
    function Benchmark(address to, uint256 first) external returns (uint256) {
        for (uint256 i = 0; i < 5000; i++) {
            _mint(to, first + i);
        }
        return totalSupply();
    }
}
