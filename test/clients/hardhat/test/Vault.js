const { expect } = require("chai");
const { ethers } = require("hardhat");
const { loadFixture, mine, time } = require("@nomicfoundation/hardhat-network-helpers");
const { anyValue } = require("@nomicfoundation/hardhat-chai-matchers/withArgs");

const ONE_YEAR = 365 * 24 * 60 * 60;
const LOCKED = ethers.parseEther("1");

async function deployVault() {
  const [owner, other] = await ethers.getSigners();
  const unlockTime = (await time.latest()) + ONE_YEAR;
  const vault = await ethers.deployContract("Vault", [unlockTime], { value: LOCKED });
  return { vault, unlockTime, owner, other };
}

describe("Vault (time)", () => {
  it("holds the locked amount and the unlock time", async () => {
    const { vault, unlockTime, owner } = await loadFixture(deployVault);
    expect(await vault.unlockTime()).to.equal(BigInt(unlockTime));
    expect(await vault.owner()).to.equal(owner.address);
    expect(await ethers.provider.getBalance(await vault.getAddress())).to.equal(LOCKED);
  });

  it("refuses an unlock time in the past at deployment", async () => {
    const past = (await time.latest()) - 1;
    const factory = await ethers.getContractFactory("Vault");
    await expect(factory.deploy(past, { value: 1 })).to.be.revertedWith(
      "Vault: unlock time should be in the future",
    );
  });

  it("stays locked before the unlock time", async () => {
    const { vault } = await loadFixture(deployVault);
    await expect(vault.withdraw()).to.be.revertedWith("Vault: still locked");
  });

  it("opens at the unlock time (time.increaseTo) and emits Withdrawal", async () => {
    const { vault, unlockTime } = await loadFixture(deployVault);
    await time.increaseTo(unlockTime);
    await expect(vault.withdraw()).to.emit(vault, "Withdrawal").withArgs(LOCKED, anyValue);
  });

  it("pays the owner on withdrawal (changeEtherBalances)", async () => {
    const { vault, unlockTime, owner } = await loadFixture(deployVault);
    await time.increaseTo(unlockTime);
    await expect(vault.withdraw()).to.changeEtherBalances([owner, vault], [LOCKED, -LOCKED]);
  });

  it("refuses another account once open", async () => {
    const { vault, unlockTime, other } = await loadFixture(deployVault);
    await time.increaseTo(unlockTime);
    await expect(vault.connect(other).withdraw()).to.be.revertedWith("Vault: you aren't the owner");
  });

  it("opens after a year of time.increase", async () => {
    const { vault } = await loadFixture(deployVault);
    await time.increase(ONE_YEAR - 3600);
    await expect(vault.withdraw()).to.be.revertedWith("Vault: still locked");
    await time.increase(3600);
    await expect(vault.withdraw()).not.to.be.reverted;
  });

  it("time.latest is the latest block's timestamp", async () => {
    await loadFixture(deployVault);
    const block = await ethers.provider.getBlock("latest");
    expect(await time.latest()).to.equal(block.timestamp);
    expect(await time.latestBlock()).to.equal(block.number);
  });

  it("time.increase moves the next block's time forward by at least that much", async () => {
    await loadFixture(deployVault);
    const before = await time.latest();
    const after = await time.increase(3600);
    expect(after).to.be.at.least(before + 3600);
    expect(await time.latest()).to.equal(after);
  });

  it("time.setNextBlockTimestamp gives the next block that exact time", async () => {
    const { vault } = await loadFixture(deployVault);
    const target = (await time.latest()) + 1000;
    await time.setNextBlockTimestamp(target);
    await mine();
    expect(await time.latest()).to.equal(target);
    expect(await vault.unlockTime()).to.be.greaterThan(BigInt(target));
  });

  it("time.increaseTo refuses a time in the past", async () => {
    await loadFixture(deployVault);
    const now = await time.latest();
    let refused = false;
    try {
      await time.increaseTo(now - 10);
    } catch {
      refused = true;
    }
    expect(refused).to.equal(true);
  });
});

describe("mining", () => {
  it("mine(n) mines n blocks", async () => {
    await loadFixture(deployVault);
    const before = await time.latestBlock();
    await mine(5);
    expect(await time.latestBlock()).to.equal(before + 5);
  });

  it("mine(n, { interval }) spaces the blocks' timestamps", async () => {
    await loadFixture(deployVault);
    const start = await time.latestBlock();
    await mine(3, { interval: 60 });
    const blocks = await Promise.all([1, 2, 3].map((i) => ethers.provider.getBlock(start + i)));
    expect(blocks[1].timestamp - blocks[0].timestamp).to.equal(60);
    expect(blocks[2].timestamp - blocks[1].timestamp).to.equal(60);
  });

  it("mine() mines one block", async () => {
    await loadFixture(deployVault);
    const before = await ethers.provider.getBlockNumber();
    await mine();
    expect(await ethers.provider.getBlockNumber()).to.equal(before + 1);
  });
});
