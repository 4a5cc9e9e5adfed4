const { expect } = require("chai");
const { ethers, network } = require("hardhat");
const helpers = require("@nomicfoundation/hardhat-network-helpers");

const { loadFixture, takeSnapshot } = helpers;

// An account nobody holds a key of, and a contract's runtime code that returns 42:
// PUSH1 42, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN.
const STRANGER = "0x1234567890123456789012345678901234567890";
const RETURNS_42 = "0x602a60005260206000f3";

async function deployStore() {
  const [owner, other] = await ethers.getSigners();
  const store = await ethers.deployContract("Store");
  const token = await ethers.deployContract("Token", ["Poked", "PKD", 1000n]);
  return { store, token, owner, other };
}

async function automine(on) {
  await network.provider.send("evm_setAutomine", [on]);
}

describe("network helpers", () => {
  describe("accounts", () => {
    it("setBalance sets any account's balance", async () => {
      await loadFixture(deployStore);
      await helpers.setBalance(STRANGER, 10n ** 21n);
      expect(await ethers.provider.getBalance(STRANGER)).to.equal(10n ** 21n);
      await helpers.setBalance(STRANGER, 0);
      expect(await ethers.provider.getBalance(STRANGER)).to.equal(0n);
    });

    it("setCode puts code at an address that then runs", async () => {
      await loadFixture(deployStore);
      await helpers.setCode(STRANGER, RETURNS_42);
      expect(await ethers.provider.getCode(STRANGER)).to.equal(RETURNS_42);
      const answer = await ethers.provider.call({ to: STRANGER, data: "0x" });
      expect(BigInt(answer)).to.equal(42n);
    });

    it("setNonce sets an account's next nonce, which its next transaction uses", async () => {
      const { other } = await loadFixture(deployStore);
      await helpers.setNonce(other.address, 100);
      expect(await ethers.provider.getTransactionCount(other.address)).to.equal(100);
      const sent = await other.sendTransaction({ to: STRANGER, value: 1n });
      expect(sent.nonce).to.equal(100);
      await sent.wait();
      expect(await ethers.provider.getTransactionCount(other.address)).to.equal(101);
    });
  });

  describe("storage", () => {
    it("getStorageAt reads a contract's slot", async () => {
      const { store } = await loadFixture(deployStore);
      await store.setNumber(1234);
      const slot0 = await helpers.getStorageAt(await store.getAddress(), 0);
      expect(BigInt(slot0)).to.equal(1234n);
    });

    it("setStorageAt changes what the contract reads", async () => {
      const { store } = await loadFixture(deployStore);
      await helpers.setStorageAt(await store.getAddress(), 0, 777);
      expect(await store.number()).to.equal(777n);
    });

    it("setStorageAt pokes an address slot and a mapping's entry", async () => {
      const { store, other } = await loadFixture(deployStore);
      const address = await store.getAddress();
      await helpers.setStorageAt(address, 1, ethers.zeroPadValue(other.address, 32));
      expect(await store.keeper()).to.equal(other.address);
      const slot = ethers.keccak256(
        ethers.AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [other.address, 2]),
      );
      await helpers.setStorageAt(address, slot, 55);
      expect(await store.credits(other.address)).to.equal(55n);
    });

    it("setStorageAt mints tokens by writing a balance slot", async () => {
      const { token, other } = await loadFixture(deployStore);
      // balanceOf is the sixth slot (name, symbol, totalSupply, owner, balanceOf): slot 4.
      const slot = ethers.keccak256(
        ethers.AbiCoder.defaultAbiCoder().encode(["address", "uint256"], [other.address, 4]),
      );
      await helpers.setStorageAt(await token.getAddress(), slot, 999);
      expect(await token.balanceOf(other.address)).to.equal(999n);
    });
  });

  describe("impersonation", () => {
    it("impersonateAccount + getImpersonatedSigner sends from an address without its key", async () => {
      await loadFixture(deployStore);
      await helpers.impersonateAccount(STRANGER);
      await helpers.setBalance(STRANGER, ethers.parseEther("10"));
      const stranger = await ethers.getImpersonatedSigner(STRANGER);
      const [, other] = await ethers.getSigners();
      await expect(
        stranger.sendTransaction({ to: other.address, value: ethers.parseEther("1") }),
      ).to.changeEtherBalance(other, ethers.parseEther("1"));
      await helpers.stopImpersonatingAccount(STRANGER);
    });

    it("an impersonated owner mints", async () => {
      const { token, owner } = await loadFixture(deployStore);
      const ownerAddress = await token.owner();
      expect(ownerAddress).to.equal(owner.address);
      // Hand the token to a keyless owner by its storage slot (3), then act as it.
      await helpers.setStorageAt(await token.getAddress(), 3, ethers.zeroPadValue(STRANGER, 32));
      const stranger = await ethers.getImpersonatedSigner(STRANGER);
      await helpers.setBalance(STRANGER, ethers.parseEther("1"));
      await expect(token.connect(stranger).mint(STRANGER, 5n))
        .to.emit(token, "Transfer")
        .withArgs(ethers.ZeroAddress, STRANGER, 5n);
      await expect(token.mint(owner.address, 1n))
        .to.be.revertedWithCustomError(token, "Unauthorized")
        .withArgs(owner.address);
      await helpers.stopImpersonatingAccount(STRANGER);
    });

    it("stopImpersonatingAccount ends it: the node no longer sends for that address", async () => {
      await loadFixture(deployStore);
      await helpers.impersonateAccount(STRANGER);
      await helpers.setBalance(STRANGER, ethers.parseEther("1"));
      await helpers.stopImpersonatingAccount(STRANGER);
      let refused = false;
      try {
        await network.provider.send("eth_sendTransaction", [
          { from: STRANGER, to: STRANGER, value: "0x1" },
        ]);
      } catch {
        refused = true;
      }
      expect(refused).to.equal(true);
    });
  });

  describe("blocks", () => {
    it("setCoinbase sets block.coinbase and the blocks' miner", async () => {
      const { store } = await loadFixture(deployStore);
      const coinbase = "0x0000000000000000000000000000000000c0ffee";
      await helpers.setCoinbase(coinbase);
      await helpers.mine();
      const block = await ethers.provider.getBlock("latest");
      expect(block.miner).to.equal(ethers.getAddress(coinbase));
      expect(await store.coinbase()).to.equal(ethers.getAddress(coinbase));
      await helpers.setCoinbase("0xc014ba5ec014ba5ec014ba5ec014ba5ec014ba5e");
    });

    it("setBlockGasLimit sets the next blocks' gas limit", async () => {
      const { store } = await loadFixture(deployStore);
      await helpers.setBlockGasLimit(25_000_000);
      await helpers.mine();
      expect((await ethers.provider.getBlock("latest")).gasLimit).to.equal(25_000_000n);
      expect(await store.gasLimit()).to.equal(25_000_000n);
    });
  });

  describe("snapshots and fixtures", () => {
    it("takeSnapshot().restore() puts state and block number back", async () => {
      const { store } = await loadFixture(deployStore);
      await store.setNumber(1);
      const snapshot = await takeSnapshot();
      const block = await ethers.provider.getBlockNumber();
      await store.setNumber(2);
      await helpers.mine(3);
      expect(await store.number()).to.equal(2n);
      await snapshot.restore();
      expect(await store.number()).to.equal(1n);
      expect(await ethers.provider.getBlockNumber()).to.equal(block);
    });

    it("a snapshot restores more than once", async () => {
      const { store } = await loadFixture(deployStore);
      const snapshot = await takeSnapshot();
      await store.setNumber(10);
      await snapshot.restore();
      expect(await store.number()).to.equal(0n);
      await store.setNumber(20);
      await snapshot.restore();
      expect(await store.number()).to.equal(0n);
    });

    it("loadFixture gives the fixture's state back after changes", async () => {
      const first = await loadFixture(deployStore);
      await first.store.setNumber(99);
      const again = await loadFixture(deployStore);
      expect(await again.store.getAddress()).to.equal(await first.store.getAddress());
      expect(await again.store.number()).to.equal(0n);
    });

    it("emits NumberChanged with the sender", async () => {
      const { store, other } = await loadFixture(deployStore);
      await expect(store.connect(other).setNumber(3))
        .to.emit(store, "NumberChanged")
        .withArgs(other.address, 3n);
    });
  });

  describe("automine off", () => {
    it("evm_setAutomine(false) leaves transactions pending until mine()", async () => {
      const { store } = await loadFixture(deployStore);
      await automine(false);
      try {
        const before = await ethers.provider.getBlockNumber();
        const first = await store.setNumber(1);
        const second = await store.setNumber(2);
        expect(await ethers.provider.getBlockNumber()).to.equal(before);
        await helpers.mine();
        const [r1, r2] = await Promise.all([first.wait(), second.wait()]);
        expect(r1.blockNumber).to.equal(before + 1);
        expect(r2.blockNumber).to.equal(before + 1);
        expect(await store.number()).to.equal(2n);
      } finally {
        await automine(true);
      }
    });

    it("dropTransaction takes a pending transaction out of the pool", async () => {
      const { store, owner } = await loadFixture(deployStore);
      await automine(false);
      try {
        const nonce = await ethers.provider.getTransactionCount(owner.address);
        const pending = await store.setNumber(5);
        expect(await ethers.provider.getTransaction(pending.hash)).to.not.equal(null);
        await helpers.dropTransaction(pending.hash);
        expect(await ethers.provider.getTransaction(pending.hash)).to.equal(null);
        await helpers.mine();
        expect(await store.number()).to.equal(0n);
        expect(await ethers.provider.getTransactionCount(owner.address)).to.equal(nonce);
      } finally {
        await automine(true);
      }
    });

    it("evm_setIntervalMining(0) with automine off keeps blocks from coming", async () => {
      await loadFixture(deployStore);
      await network.provider.send("evm_setIntervalMining", [0]);
      await automine(false);
      try {
        const [owner] = await ethers.getSigners();
        const before = await ethers.provider.getBlockNumber();
        const sent = await owner.sendTransaction({ to: STRANGER, value: 1n });
        expect(await ethers.provider.getBlockNumber()).to.equal(before);
        await helpers.mine();
        expect((await sent.wait()).blockNumber).to.equal(before + 1);
      } finally {
        await automine(true);
      }
    });
  });

  describe("tracing", () => {
    it("debug_traceCall runs a call with the struct logger and changes nothing", async () => {
      const { store, owner } = await loadFixture(deployStore);
      const data = store.interface.encodeFunctionData("setNumber", [5]);
      const trace = await network.provider.send("debug_traceCall", [
        { from: owner.address, to: await store.getAddress(), data },
        "latest",
      ]);
      expect(trace.failed).to.equal(false);
      expect(trace.gas).to.be.greaterThan(21_000);
      const ops = trace.structLogs.map((step) => step.op);
      expect(ops).to.include("SSTORE");
      expect(ops).to.include("LOG2");
      expect(await store.number()).to.equal(0n);
    });

    it("debug_traceCall of a revert says it failed and returns the custom error", async () => {
      const { token, owner, other } = await loadFixture(deployStore);
      const data = token.interface.encodeFunctionData("transfer", [other.address, 5000n]);
      const trace = await network.provider.send("debug_traceCall", [
        { from: owner.address, to: await token.getAddress(), data },
        "latest",
      ]);
      expect(trace.failed).to.equal(true);
      const selector = token.interface.getError("InsufficientBalance").selector.slice(2);
      expect(trace.returnValue.toLowerCase()).to.contain(selector);
      expect(trace.structLogs.at(-1).op).to.equal("REVERT");
    });
  });

  describe("the node", () => {
    it("answers web3_clientVersion as a network the helpers accept", async () => {
      const version = await network.provider.send("web3_clientVersion");
      expect(version).to.match(/^(HardhatNetwork|anvil)/i);
    });

    it("lists the development accounts as signers, funded", async () => {
      const signers = await ethers.getSigners();
      expect(signers.length).to.be.at.least(10);
      expect(signers[0].address).to.equal("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
      expect(await ethers.provider.getBalance(signers[9].address)).to.be.greaterThan(0n);
    });
  });
});
