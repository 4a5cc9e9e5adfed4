// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "hardhat/console.sol";

/// Holds what it was deployed with until a point in time (block.timestamp).
contract Vault {
    uint256 public unlockTime;
    address payable public owner;

    event Withdrawal(uint256 amount, uint256 when);

    constructor(uint256 unlockTime_) payable {
        require(block.timestamp < unlockTime_, "Vault: unlock time should be in the future");
        unlockTime = unlockTime_;
        owner = payable(msg.sender);
    }

    function withdraw() external {
        require(block.timestamp >= unlockTime, "Vault: still locked");
        require(msg.sender == owner, "Vault: you aren't the owner");
        console.log("Vault: withdrawing %s wei at %s", address(this).balance, block.timestamp);
        emit Withdrawal(address(this).balance, block.timestamp);
        owner.transfer(address(this).balance);
    }
}
