// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A contract the traced transaction creates, calls and destroys.
contract Child {
    event Set(uint256 v);

    uint256 public value;

    constructor(uint256 v) payable {
        value = v;
    }

    function set(uint256 v) external payable {
        value = v;
        emit Set(v);
    }

    function fail(string calldata why) external pure {
        revert(why);
    }

    function burn() external {
        uint256 i;
        while (true) {
            value = i++;
        }
    }

    function bye(address payable to) external {
        selfdestruct(to);
    }
}

/// One transaction with every kind of frame: CREATE, CREATE2, CALL, DELEGATECALL, STATICCALL,
/// a revert caught by try/catch, a subcall out of gas and a self-destruct.
contract Tracing {
    event Ran(uint256 v);

    uint256 public stored;

    function run() external payable returns (uint256) {
        Child a = new Child{value: 1}(1);
        Child b = new Child{salt: bytes32(uint256(7))}(2);
        a.set(5);
        (bool ok, ) = address(b).delegatecall(abi.encodeCall(Child.set, (9)));
        require(ok, "delegatecall failed");
        try a.fail("nope") {} catch {}
        (bool burnt, ) = address(a).call{gas: 20_000}(abi.encodeCall(Child.burn, ()));
        require(!burnt, "burn returned");
        uint256 v = a.value();
        a.bye(payable(msg.sender));
        stored += v;
        emit Ran(v);
        return v;
    }

    /// Grows memory to `size` bytes and writes it in `rounds` steps.
    function grow(uint256 size, uint256 rounds) external returns (uint256 sum) {
        bytes memory b = new bytes(size);
        for (uint256 i = 0; i < rounds; i++) {
            b[(i * 97) % size] = bytes1(uint8(i));
            sum += uint8(b[(i * 31) % size]);
        }
        stored = sum;
    }
}
