// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A counter with an event and a revert reason, for the clients' tests (cast, viem, ethers, web3.js).
contract Counter {
    uint256 public count;

    event Counted(address indexed by, uint256 count);

    function set(uint256 value) external {
        require(value < 1000, "Counter: too big");
        count = value;
        emit Counted(msg.sender, value);
    }

    function increment() external {
        count += 1;
        emit Counted(msg.sender, count);
    }
}
