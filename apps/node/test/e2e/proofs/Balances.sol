// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A mapping at slot 0: the worked example of eth_getProof's mapping-slot rule (docs/rpc.md).
contract Balances {
    mapping(address => uint256) public balances;

    function set(address who, uint256 amount) external {
        balances[who] = amount;
    }
}
