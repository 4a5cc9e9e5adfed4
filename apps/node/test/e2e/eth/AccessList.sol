// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A contract another one writes to.
contract Other {
    uint256 public n;

    function touch() external {
        n += 1;
    }
}

/// Calls whose access lists eth_createAccessList finds.
contract Store {
    mapping(uint256 => uint256) public v; // slot 0
    uint256 public count; // slot 1
    Other public other; // slot 2

    constructor(Other o) {
        other = o;
    }

    function set(uint256 k, uint256 x) external {
        v[k] = x;
        count += 1;
        other.touch();
    }

    function fail() external {
        count += 1;
        revert("nope");
    }

    /// The sender, this contract and a precompile are left out; 0xbeef is listed.
    function probe() external view returns (uint256) {
        return
            msg.sender.balance +
            address(this).balance +
            uint160(ecrecover(bytes32(0), 27, bytes32(0), bytes32(0))) +
            address(0xbeef).balance;
    }
}
