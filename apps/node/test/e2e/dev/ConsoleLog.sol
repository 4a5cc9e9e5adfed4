// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// The part of Hardhat's console.sol the test uses: a static call to the console address with
/// the ABI encoding of the function (the real library does the same, through a view-casting
/// trick so that it can be called from `pure` functions).
library console {
    address constant CONSOLE_ADDRESS = 0x000000000000000000636F6e736F6c652e6c6f67;

    function _send(bytes memory payload) private view {
        (bool ok, ) = CONSOLE_ADDRESS.staticcall(payload);
        ok;
    }

    function log(string memory p0) internal view {
        _send(abi.encodeWithSignature("log(string)", p0));
    }

    function log(string memory p0, uint256 p1, address p2) internal view {
        _send(abi.encodeWithSignature("log(string,uint256,address)", p0, p1, p2));
    }

    function logInt(int256 p0) internal view {
        _send(abi.encodeWithSignature("logInt(int256)", p0));
    }

    function logBytes3(bytes3 p0) internal view {
        _send(abi.encodeWithSignature("logBytes3(bytes3)", p0));
    }

    function log(bool p0, string memory p1) internal view {
        _send(abi.encodeWithSignature("log(bool,string)", p0, p1));
    }

    /// A call the node cannot decode: a string whose length runs past the data.
    function logBroken() internal view {
        _send(abi.encodePacked(bytes4(keccak256("log(string)")), uint256(32), uint256(1000)));
    }
}

contract Greeter {
    string public greeting;

    constructor(string memory g) {
        console.log("Deploying a Greeter with greeting:", 7, address(this));
        greeting = g;
    }

    function setGreeting(string memory g) external {
        console.log("Changing greeting, %d times, by %s", 3, msg.sender);
        console.logInt(-42);
        console.logBytes3(0xabcdef);
        console.logBroken();
        greeting = g;
    }

    function failing() external view {
        console.log(true, "before the revert");
        revert("no");
    }

    function greet() external view returns (string memory) {
        console.log(greeting);
        return greeting;
    }
}
