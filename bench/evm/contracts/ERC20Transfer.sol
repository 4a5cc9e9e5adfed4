// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./ERC20.sol";

/// evm-bench's erc20.transfer: mint to the caller, then 5,000 transfers to one holder.
contract ERC20Transfer is ERC20 {
    /// Transfers `first`, `first + 1`, … to `to`; answers `to`'s balance.
    function Benchmark(address to, uint256 first) external returns (uint256) {
        _mint(msg.sender, 1_000_000 * 10 ** decimals());
        for (uint256 i = 0; i < 5000; i++) {
            transfer(to, first + i);
        }
        return balanceOf(to);
    }
}
