// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// The innermost frames: storage updates with an event, and a memory buffer that grows.
contract Leaf {
    event Touched(uint256 indexed from, uint256 sum);

    mapping(uint256 => uint256) public cells;

    /// SLOAD and SSTORE of `n` cells from `from` on, one event.
    function touch(uint256 from, uint256 n) external returns (uint256 sum) {
        for (uint256 i = from; i < from + n; i++) {
            cells[i] += i + 1;
            sum += cells[i];
        }
        emit Touched(from, sum);
    }

    /// Grows this frame's memory to `size` bytes, writes every 128th byte and hashes it all.
    function grow(uint256 size) external pure returns (bytes32) {
        bytes memory b = new bytes(size);
        for (uint256 i = 0; i < size; i += 128) b[i] = bytes1(uint8(i >> 7));
        return keccak256(b);
    }
}

/// The middle frames: a CALL and a STATICCALL into Leaf.
contract Middle {
    Leaf public immutable leaf;

    constructor(Leaf l) {
        leaf = l;
    }

    function relay(uint256 from, uint256 n, uint256 size) external returns (uint256) {
        uint256 s = leaf.touch(from, n);
        return s ^ uint256(leaf.grow(size));
    }
}

/// The traced transaction: `run` writes fresh slots, reads them back (and as many cold ones),
/// hashes in a loop with an event every 32 rounds, then calls Middle (which calls Leaf) a few
/// times.
contract Work {
    event Round(uint256 indexed round, uint256 acc);

    mapping(uint256 => uint256) public slots;
    uint256 public total;
    Leaf public immutable leaf;
    Middle public immutable middle;

    constructor() {
        leaf = new Leaf();
        middle = new Middle(leaf);
    }

    function run(
        uint256 writes,
        uint256 reads,
        uint256 rounds,
        uint256 calls,
        uint256 growBytes
    ) external returns (uint256 acc) {
        for (uint256 i = 0; i < writes; i++) slots[i] = i + 1;
        for (uint256 i = 0; i < reads; i++) acc += slots[i % (2 * writes)];
        for (uint256 r = 0; r < rounds; r++) {
            // In the scratch space: the frame's memory does not grow with the rounds.
            assembly {
                mstore(0, acc)
                mstore(32, r)
                acc := keccak256(0, 64)
            }
            if (r % 32 == 0) emit Round(r, acc);
        }
        for (uint256 c = 0; c < calls; c++) acc ^= middle.relay(c * 2, 2, growBytes);
        total = acc;
    }
}
