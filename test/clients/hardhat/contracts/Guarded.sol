// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Reverts of every kind: require with a reason, revert with a reason, a panic, none at all.
contract Guarded {
    address public owner;
    uint256 public value;
    uint256 public deposits;

    event ValueChanged(uint256 previous, uint256 current);
    event Deposited(address indexed from, uint256 amount);

    constructor() {
        owner = msg.sender;
    }

    modifier onlyOwner() {
        require(msg.sender == owner, "Guarded: caller is not the owner");
        _;
    }

    function setValue(uint256 next) external onlyOwner {
        require(next > 0, "Guarded: value must be positive");
        emit ValueChanged(value, next);
        value = next;
    }

    function alwaysFails() external pure returns (uint256) {
        revert("Guarded: always fails");
    }

    function divide(uint256 a, uint256 b) external pure returns (uint256) {
        return a / b;
    }

    function failWithoutReason() external pure {
        revert();
    }

    function deposit() external payable {
        require(msg.value > 0, "Guarded: nothing sent");
        deposits += msg.value;
        emit Deposited(msg.sender, msg.value);
    }

    function withdrawAll() external onlyOwner {
        uint256 amount = address(this).balance;
        deposits = 0;
        (bool ok, ) = payable(msg.sender).call{value: amount}("");
        require(ok, "Guarded: transfer failed");
    }
}

/// Calls Guarded from another contract: the reason must come back through the call.
contract Caller {
    Guarded public immutable target;

    constructor(Guarded target_) {
        target = target_;
    }

    function setThrough(uint256 next) external {
        target.setValue(next);
    }
}
