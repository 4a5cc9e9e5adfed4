const { expect } = require("chai");
const { ethers } = require("hardhat");
const { loadFixture } = require("@nomicfoundation/hardhat-network-helpers");
const { anyValue } = require("@nomicfoundation/hardhat-chai-matchers/withArgs");

const SUPPLY = ethers.parseEther("1000000");

async function deployToken() {
  const [owner, alice, bob] = await ethers.getSigners();
  const token = await ethers.deployContract("Token", ["Nodex Test Token", "NTT", SUPPLY]);
  await token.waitForDeployment();
  return { token, owner, alice, bob };
}

describe("Token", () => {
  describe("deployment", () => {
    it("has its name, symbol, decimals and owner", async () => {
      const { token, owner } = await loadFixture(deployToken);
      expect(await token.name()).to.equal("Nodex Test Token");
      expect(await token.symbol()).to.equal("NTT");
      expect(await token.decimals()).to.equal(18n);
      expect(await token.owner()).to.equal(owner.address);
    });

    it("gives the whole supply to the deployer", async () => {
      const { token, owner } = await loadFixture(deployToken);
      expect(await token.totalSupply()).to.equal(SUPPLY);
      expect(await token.balanceOf(owner.address)).to.equal(SUPPLY);
    });

    it("emits Transfer from the zero address in the deployment transaction", async () => {
      const { token, owner } = await loadFixture(deployToken);
      await expect(token.deploymentTransaction())
        .to.emit(token, "Transfer")
        .withArgs(ethers.ZeroAddress, owner.address, SUPPLY);
    });

    it("has code at its address and a receipt with that contract address", async () => {
      const { token } = await loadFixture(deployToken);
      const address = await token.getAddress();
      expect(await ethers.provider.getCode(address)).to.match(/^0x[0-9a-f]{100,}$/);
      const receipt = await token.deploymentTransaction().wait();
      expect(receipt.contractAddress).to.equal(address);
      expect(receipt.status).to.equal(1);
    });
  });

  describe("transfers", () => {
    it("emits Transfer with its arguments", async () => {
      const { token, owner, alice } = await loadFixture(deployToken);
      await expect(token.transfer(alice.address, 50n))
        .to.emit(token, "Transfer")
        .withArgs(owner.address, alice.address, 50n);
    });

    it("moves balances (changeTokenBalances)", async () => {
      const { token, owner, alice } = await loadFixture(deployToken);
      await expect(token.transfer(alice.address, 50n)).to.changeTokenBalances(
        token,
        [owner, alice],
        [-50n, 50n],
      );
    });

    it("moves one balance (changeTokenBalance) from another signer", async () => {
      const { token, alice, bob } = await loadFixture(deployToken);
      await token.transfer(alice.address, 100n);
      await expect(token.connect(alice).transfer(bob.address, 40n)).to.changeTokenBalance(
        token,
        bob,
        40n,
      );
      expect(await token.balanceOf(alice.address)).to.equal(60n);
    });

    it("reverts a transaction with InsufficientBalance and its arguments", async () => {
      const { token, alice, bob } = await loadFixture(deployToken);
      await expect(token.connect(alice).transfer(bob.address, 1n))
        .to.be.revertedWithCustomError(token, "InsufficientBalance")
        .withArgs(alice.address, 0n, 1n);
    });

    it("reverts a call (staticCall) with InsufficientBalance", async () => {
      const { token, alice, bob } = await loadFixture(deployToken);
      await expect(token.connect(alice).transfer.staticCall(bob.address, 7n))
        .to.be.revertedWithCustomError(token, "InsufficientBalance")
        .withArgs(alice.address, 0n, 7n);
    });

    it("reverts a gas estimate with ZeroAddress", async () => {
      const { token } = await loadFixture(deployToken);
      await expect(
        token.transfer.estimateGas(ethers.ZeroAddress, 1n),
      ).to.be.revertedWithCustomError(token, "ZeroAddress");
    });

    it("does not revert a transfer within the balance", async () => {
      const { token, alice } = await loadFixture(deployToken);
      await expect(token.transfer(alice.address, SUPPLY)).not.to.be.reverted;
    });
  });

  describe("allowances", () => {
    it("emits Approval and records the allowance", async () => {
      const { token, owner, alice } = await loadFixture(deployToken);
      await expect(token.approve(alice.address, 500n))
        .to.emit(token, "Approval")
        .withArgs(owner.address, alice.address, 500n);
      expect(await token.allowance(owner.address, alice.address)).to.equal(500n);
    });

    it("lets the spender transfer within the allowance", async () => {
      const { token, owner, alice, bob } = await loadFixture(deployToken);
      await token.approve(alice.address, 500n);
      await expect(
        token.connect(alice).transferFrom(owner.address, bob.address, 300n),
      ).to.changeTokenBalances(token, [owner, bob], [-300n, 300n]);
      expect(await token.allowance(owner.address, alice.address)).to.equal(200n);
    });

    it("reverts beyond the allowance with InsufficientAllowance", async () => {
      const { token, owner, alice, bob } = await loadFixture(deployToken);
      await token.approve(alice.address, 10n);
      await expect(token.connect(alice).transferFrom(owner.address, bob.address, 11n))
        .to.be.revertedWithCustomError(token, "InsufficientAllowance")
        .withArgs(alice.address, 10n, 11n);
    });
  });

  describe("minting", () => {
    it("lets the owner mint, emitting Transfer and raising the supply", async () => {
      const { token, alice } = await loadFixture(deployToken);
      await expect(token.mint(alice.address, 5n))
        .to.emit(token, "Transfer")
        .withArgs(ethers.ZeroAddress, alice.address, 5n);
      expect(await token.totalSupply()).to.equal(SUPPLY + 5n);
    });

    it("refuses anyone else with Unauthorized(caller)", async () => {
      const { token, alice } = await loadFixture(deployToken);
      await expect(token.connect(alice).mint(alice.address, 5n))
        .to.be.revertedWithCustomError(token, "Unauthorized")
        .withArgs(alice.address);
    });
  });

  describe("events", () => {
    it("finds past Transfer events with queryFilter, filtered by topic", async () => {
      const { token, owner, alice, bob } = await loadFixture(deployToken);
      await token.transfer(alice.address, 1n);
      await token.transfer(bob.address, 2n);
      await token.transfer(alice.address, 3n);
      const toAlice = await token.queryFilter(token.filters.Transfer(owner.address, alice.address));
      expect(toAlice.map((e) => e.args.value)).to.deep.equal([1n, 3n]);
      const all = await token.queryFilter(token.filters.Transfer(), 0, "latest");
      expect(all.length).to.be.at.least(4);
    });

    it("matches any value with anyValue in withArgs", async () => {
      const { token, alice } = await loadFixture(deployToken);
      await expect(token.transfer(alice.address, 9n))
        .to.emit(token, "Transfer")
        .withArgs(anyValue, alice.address, anyValue);
    });
  });
});
