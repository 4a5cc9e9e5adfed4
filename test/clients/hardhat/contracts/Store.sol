// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Storage at known slots, to poke with setStorageAt, and the block's context to read back.
contract Store {
    uint256 public number; // slot 0
    address public keeper; // slot 1
    mapping(address => uint256) public credits; // slot 2

    event NumberChanged(address indexed by, uint256 number);

    constructor() {
        keeper = msg.sender;
    }

    function setNumber(uint256 next) external {
        number = next;
        emit NumberChanged(msg.sender, next);
    }

    function credit(address account, uint256 amount) external {
        credits[account] += amount;
    }

    function coinbase() external view returns (address) {
        return block.coinbase;
    }

    function gasLimit() external view returns (uint256) {
        return block.gaslimit;
    }

    function timestamp() external view returns (uint256) {
        return block.timestamp;
    }
}
