// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

contract Child {
    uint256 public value;

    constructor(uint256 v) {
        value = v;
    }
}

/// Emits, reverts, panics and creates: the behaviours the node's tests check.
contract Lab {
    event Noted(uint256 indexed id, address indexed by, string text);
    event Created(address child);

    error Custom(uint256 code);

    uint256[] private items;
    mapping(bytes32 => uint256) private heavy;

    function note(uint256 id, string calldata text) external {
        emit Noted(id, msg.sender, text);
    }

    function fail(string calldata reason) external pure {
        revert(reason);
    }

    function failCustom() external pure {
        revert Custom(42);
    }

    function divide(uint256 a, uint256 b) external pure returns (uint256) {
        return a / b;
    }

    function at(uint256 i) external view returns (uint256) {
        return items[i];
    }

    function create(uint256 v) external returns (address) {
        Child child = new Child(v);
        emit Created(address(child));
        return address(child);
    }

    /// Writes `n` fresh slots: gas that grows with `n` (estimates must cover it).
    function fill(uint256 n) external {
        for (uint256 i = 0; i < n; i++) {
            heavy[keccak256(abi.encode(i, block.number))] = i + 1;
        }
    }

    function transient(uint256 v) external returns (uint256 r) {
        assembly {
            tstore(0, v)
            r := tload(0)
        }
    }
}
