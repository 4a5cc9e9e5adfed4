// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// evm-bench's ten-thousand-hashes (which hashes 20,000 words): keccak256 of `seed + i` for
/// i below 20,000, folded together so that no hash can be left out.
contract TenThousandHashes {
    function Benchmark(uint256 seed) external pure returns (bytes32 folded) {
        for (uint256 i = 0; i < 20000; i++) {
            folded ^= keccak256(abi.encodePacked(seed + i));
        }
    }
}
