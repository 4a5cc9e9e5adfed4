const { expect } = require("chai");
const { ethers } = require("hardhat");
const { loadFixture } = require("@nomicfoundation/hardhat-network-helpers");
const { PANIC_CODES } = require("@nomicfoundation/hardhat-chai-matchers/panic");

async function deployGuarded() {
  const [owner, other] = await ethers.getSigners();
  const guarded = await ethers.deployContract("Guarded");
  const caller = await ethers.deployContract("Caller", [await guarded.getAddress()]);
  return { guarded, caller, owner, other };
}

describe("Guarded", () => {
  describe("require and revert reasons", () => {
    it("reverts a transaction with the require's reason", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.setValue(0)).to.be.revertedWith("Guarded: value must be positive");
    });

    it("reverts a call (staticCall) with the require's reason", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.setValue.staticCall(0)).to.be.revertedWith(
        "Guarded: value must be positive",
      );
    });

    it("reverts a view call with revert's reason", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.alwaysFails()).to.be.revertedWith("Guarded: always fails");
    });

    it("reverts another signer's transaction with the modifier's reason", async () => {
      const { guarded, other } = await loadFixture(deployGuarded);
      await expect(guarded.connect(other).setValue(1)).to.be.revertedWith(
        "Guarded: caller is not the owner",
      );
    });

    it("reverts a transaction sent with its own gas limit, reason intact", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.setValue(0, { gasLimit: 100_000 })).to.be.revertedWith(
        "Guarded: value must be positive",
      );
    });

    it("passes a reason up through a contract that calls", async () => {
      const { caller } = await loadFixture(deployGuarded);
      // The caller is not Guarded's owner: the modifier's reason comes back through it.
      await expect(caller.setThrough(5)).to.be.revertedWith("Guarded: caller is not the owner");
    });

    it("reverts with a panic on division by zero (revertedWithPanic)", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.divide(1, 0)).to.be.revertedWithPanic(PANIC_CODES.DIVISION_BY_ZERO);
    });

    it("reverts without a reason (revertedWithoutReason)", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.failWithoutReason()).to.be.revertedWithoutReason();
    });

    it("surfaces the reason on a failed estimate through ethers' error", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      let error;
      try {
        await guarded.setValue.estimateGas(0);
      } catch (err) {
        error = err;
      }
      expect(error).to.not.equal(undefined);
      expect(error.reason ?? error.message).to.contain("Guarded: value must be positive");
    });
  });

  describe("successful transactions", () => {
    it("emits ValueChanged with the previous and the new value", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.setValue(7)).to.emit(guarded, "ValueChanged").withArgs(0n, 7n);
      await expect(guarded.setValue(9)).to.emit(guarded, "ValueChanged").withArgs(7n, 9n);
      expect(await guarded.value()).to.equal(9n);
    });

    it("moves ether into the contract (changeEtherBalances)", async () => {
      const { guarded, other } = await loadFixture(deployGuarded);
      const amount = ethers.parseEther("1.5");
      await expect(guarded.connect(other).deposit({ value: amount })).to.changeEtherBalances(
        [other, guarded],
        [-amount, amount],
      );
      await expect(guarded.connect(other).deposit({ value: 1n }))
        .to.emit(guarded, "Deposited")
        .withArgs(other.address, 1n);
    });

    it("pays the owner back (changeEtherBalance, fees included)", async () => {
      const { guarded, owner, other } = await loadFixture(deployGuarded);
      const amount = ethers.parseEther("2");
      await guarded.connect(other).deposit({ value: amount });
      await expect(guarded.withdrawAll()).to.changeEtherBalance(owner, amount);
    });

    it("transfers ether between accounts (changeEtherBalances)", async () => {
      const { owner, other } = await loadFixture(deployGuarded);
      const value = ethers.parseEther("0.25");
      await expect(owner.sendTransaction({ to: other.address, value })).to.changeEtherBalances(
        [owner, other],
        [-value, value],
      );
    });

    it("refuses a deposit of nothing", async () => {
      const { guarded } = await loadFixture(deployGuarded);
      await expect(guarded.deposit({ value: 0 })).to.be.revertedWith("Guarded: nothing sent");
    });
  });
});
