// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./ERC20.sol";

/// evm-bench's erc20.approval-transfer: 999 rounds of approve, transferFrom and allowance
/// checks, the caller approving itself.
contract ERC20ApprovalTransfer is ERC20 {
    /// Approves and moves `first + i` to `to` in round i; answers `to`'s balance.
    function Benchmark(address to, uint256 first) external returns (uint256) {
        _mint(msg.sender, 1_000_000_000 * 10 ** decimals());
        for (uint256 i = 1; i < 1000; i++) {
            uint256 value = first + i;
            require(allowance(msg.sender, msg.sender) == 0, "allowance before");
            approve(msg.sender, value);
            require(allowance(msg.sender, msg.sender) == value, "allowance given");
            transferFrom(msg.sender, to, value);
            require(allowance(msg.sender, msg.sender) == 0, "allowance after");
        }
        return balanceOf(to);
    }
}
