import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  decodeTransaction,
  hexToBytes,
  keccak256,
  type Log,
  NETWORKS,
  type NetworkPreset,
  rlpEncode,
  type SignedTransaction,
} from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BlockContext,
  ExecutionError,
  Executor,
  FeeRules,
  type TransactionOutcome,
} from "../../src/index.js";

/**
 * The official filled state tests of ethereum/tests (`GeneralStateTests`), read in place from
 * the shared vectors beside the repository, never copied into it. Pinned: the commit their
 * README names and the number of files.
 */
export const STATE_TESTS_COMMIT = "4c87ebbf024a3e9ec842bcce90564f629a3bcd82";
export const STATE_TEST_FILES = 2_703;

const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const VECTORS = "../shared/vectors/ethereum-tests";

/**
 * Where the state tests are: `NODEX_STATE_TESTS_DIR` when set; else beside the repository
 * (`../shared/vectors/ethereum-tests`); else, for a clone of a local repository (CI's fresh
 * clone), beside the repository it was cloned from.
 */
function stateTestsDir(): string {
  const given = process.env.NODEX_STATE_TESTS_DIR;
  if (given !== undefined && given !== "") return resolve(given);
  const beside = resolve(REPOSITORY, VECTORS);
  if (existsSync(beside)) return beside;
  try {
    const origin = execFileSync("git", ["config", "--get", "remote.origin.url"], {
      cwd: REPOSITORY,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    const path = origin.startsWith("file://") ? fileURLToPath(origin) : origin;
    if (path.startsWith("/")) {
      const besideOrigin = resolve(path.replace(/\/\.git\/?$/, ""), VECTORS);
      if (existsSync(besideOrigin)) return besideOrigin;
    }
  } catch {}
  return beside;
}

export const STATE_TESTS_DIR = stateTestsDir();

/**
 * The folders under `GeneralStateTests/` and their Cancun cases, as the README counts them: a
 * folder not listed here, or a count that differs, fails the census (`census.test.ts`).
 */
export const CATEGORIES: Readonly<Record<string, number>> = {
  "Cancun/stEIP1153-transientStorage": 52,
  "Cancun/stEIP4844-blobtransactions": 10,
  "Cancun/stEIP5656-MCOPY": 112,
  "Pyspecs/berlin/eip2930_access_list": 1,
  "Pyspecs/byzantium/eip198_modexp_precompile": 16,
  "Pyspecs/cancun/eip1153_tstore": 67,
  "Pyspecs/cancun/eip4844_blobs": 556,
  "Pyspecs/cancun/eip5656_mcopy": 93,
  "Pyspecs/cancun/eip6780_selfdestruct": 107,
  "Pyspecs/cancun/eip7516_blobgasfee": 4,
  "Pyspecs/frontier/opcodes": 16,
  "Pyspecs/homestead/yul": 1,
  "Pyspecs/istanbul/eip1344_chainid": 1,
  "Pyspecs/shanghai/eip3651_warm_coinbase": 16,
  "Pyspecs/shanghai/eip3855_push0": 7,
  "Shanghai/stEIP3651-warmcoinbase": 12,
  "Shanghai/stEIP3855-push0": 9,
  "Shanghai/stEIP3860-limitmeterinitcode": 6,
  "VMTests/vmArithmeticTest": 219,
  "VMTests/vmBitwiseLogicOperation": 57,
  "VMTests/vmIOandFlowOperations": 170,
  "VMTests/vmLogTest": 46,
  "VMTests/vmPerformance": 23,
  "VMTests/vmTests": 136,
  stArgsZeroOneBalance: 96,
  stAttackTest: 2,
  stBadOpcode: 4134,
  stBugs: 8,
  stCallCodes: 86,
  stCallCreateCallCodeTest: 56,
  stCallDelegateCodesCallCodeHomestead: 58,
  stCallDelegateCodesHomestead: 58,
  stChainId: 2,
  stCodeCopyTest: 2,
  stCodeSizeLimit: 9,
  stCreate2: 191,
  stCreateTest: 209,
  stDelegatecallTestHomestead: 33,
  stEIP150Specific: 25,
  stEIP150singleCodeGasPrices: 450,
  stEIP1559: 1845,
  stEIP158Specific: 8,
  stEIP2930: 140,
  stEIP3607: 12,
  stExample: 39,
  stExtCodeHash: 69,
  stHomesteadSpecific: 5,
  stInitCodeTest: 22,
  stLogTests: 46,
  stMemExpandingEIP150Calls: 14,
  stMemoryStressTest: 82,
  stMemoryTest: 578,
  stNonZeroCallsTest: 24,
  stPreCompiledContracts: 960,
  stPreCompiledContracts2: 248,
  stQuadraticComplexityTest: 34,
  stRandom: 310,
  stRandom2: 221,
  stRecursiveCreate: 2,
  stRefundTest: 26,
  stReturnDataTest: 273,
  stRevertTest: 271,
  stSLoadTest: 1,
  stSStoreTest: 475,
  stSelfBalance: 42,
  stShift: 42,
  stSolidityTest: 23,
  stSpecialTest: 22,
  stStackTests: 375,
  stStaticCall: 478,
  stStaticFlagEnabled: 34,
  stSystemOperationsTest: 83,
  stTimeConsuming: 5190,
  stTransactionTest: 260,
  stTransitionTest: 6,
  stWalletTest: 46,
  stZeroCallsRevert: 16,
  stZeroCallsTest: 24,
  stZeroKnowledge: 944,
  stZeroKnowledge2: 519,
};

/**
 * The runs are split in two halves of about the same time (a test file per mode and half, so
 * that vitest runs them side by side): these folders, and all the others.
 */
const FIRST_HALF: ReadonlySet<string> = new Set([
  "stBadOpcode",
  "stPreCompiledContracts2",
  "stCreateTest",
  "stCreate2",
  "stDelegatecallTestHomestead",
]);

export type Half = 1 | 2;

export function halfOf(category: string): Half {
  return FIRST_HALF.has(category) ? 1 : 2;
}

/** `NODEX_SLOW_STATE_TESTS=1` runs the folders that are slow by design too. */
export const SLOW_STATE_TESTS = process.env.NODEX_SLOW_STATE_TESTS === "1";

export const SLOW_CATEGORIES: ReadonlySet<string> = new Set([
  "stTimeConsuming",
  "stQuadraticComplexityTest",
  "stMemoryStressTest",
]);

type HexString = `0x${string}`;

interface FixtureAccount {
  readonly balance: HexString;
  readonly nonce: HexString;
  readonly code: HexString;
  readonly storage: Readonly<Record<HexString, HexString>>;
}

interface PostEntry {
  readonly hash: HexString;
  readonly logs: HexString;
  readonly txbytes: HexString;
  readonly indexes: { readonly data: number; readonly gas: number; readonly value: number };
  readonly expectException?: string;
}

interface Fixture {
  readonly env: {
    readonly currentCoinbase: HexString;
    readonly currentGasLimit: HexString;
    readonly currentNumber: HexString;
    readonly currentTimestamp: HexString;
    readonly currentDifficulty: HexString;
    readonly currentBaseFee?: HexString;
    readonly currentRandom?: HexString;
    readonly currentExcessBlobGas?: HexString;
  };
  readonly pre: Readonly<Record<HexString, FixtureAccount>>;
  readonly transaction: { readonly data: readonly HexString[] };
  readonly post: { readonly Cancun?: readonly PostEntry[] };
}

/** A case's transaction type, by the first byte of its `txbytes` (as the README counts them). */
export type TxType = "legacy" | "eip2930" | "eip1559" | "blob";

/** One entry of `post.Cancun`: one transaction to run on `pre`, one state root to reach. */
export interface StateTestCase {
  /** The file's path under `GeneralStateTests/`. */
  readonly file: string;
  /** The file's folder under `GeneralStateTests/` (`stCallCodes`, `Cancun/stEIP5656-MCOPY`). */
  readonly category: string;
  /** The test's name in its file. */
  readonly test: string;
  /** The index of the case in the test's `post.Cancun`. */
  readonly index: number;
  readonly txType: TxType;
  readonly fixture: Fixture;
  readonly post: PostEntry;
}

/** `test[index]` in `file`: how a case is named in failures and in the rules' lists. */
export function caseId(c: StateTestCase): string {
  return `${c.file}:${c.test}[${c.index}]`;
}

function txType(txbytes: string): TxType {
  const first = Number.parseInt(txbytes.slice(2, 4), 16);
  if (first >= 0xc0) return "legacy";
  if (first === 1) return "eip2930";
  if (first === 2) return "eip1559";
  if (first === 3) return "blob";
  throw new Error(`unknown transaction type ${first}`);
}

/** The fixtures' folder, or an error that says where it was looked for. */
function testsRoot(): string {
  const readme = join(STATE_TESTS_DIR, "README.md");
  if (!existsSync(readme)) {
    throw new Error(
      `the Ethereum state tests are missing: expected ethereum/tests ${STATE_TESTS_COMMIT} ` +
        `(GeneralStateTests and its README.md) at ${STATE_TESTS_DIR}, beside the repository (or set NODEX_STATE_TESTS_DIR)`,
    );
  }
  if (!readFileSync(readme, "utf8").includes(STATE_TESTS_COMMIT)) {
    throw new Error(
      `${readme} does not name commit ${STATE_TESTS_COMMIT}: the fixtures are another version`,
    );
  }
  return join(STATE_TESTS_DIR, "GeneralStateTests");
}

/** Every fixture file under `GeneralStateTests/`, sorted (paths relative to it). */
export function fixtureFiles(): string[] {
  const root = testsRoot();
  return (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.split("\\").join("/"))
    .sort();
}

/** The Cancun cases of the fixture files in `categories` (all of them without), in file order. */
export function loadCases(categories?: ReadonlySet<string>): StateTestCase[] {
  const root = testsRoot();
  const cases: StateTestCase[] = [];
  for (const file of fixtureFiles()) {
    const category = dirname(file);
    if (categories !== undefined && !categories.has(category)) continue;
    const tests = JSON.parse(readFileSync(join(root, file), "utf8")) as Record<string, Fixture>;
    for (const [test, fixture] of Object.entries(tests)) {
      const posts = fixture.post.Cancun ?? [];
      posts.forEach((post, index) => {
        cases.push({
          file,
          category,
          test,
          index,
          txType: txType(post.txbytes),
          fixture,
          post,
        });
      });
    }
  }
  return cases;
}

/**
 * A rule that leaves cases out, with its reason as its name, and the number of cases it leaves
 * out by default and with `NODEX_SLOW_STATE_TESTS=1`.
 */
export interface Rule {
  readonly name: string;
  readonly applies: (c: StateTestCase) => boolean;
  readonly expected: { readonly default: number; readonly slow: number };
}

/**
 * Where the chain differs from Ethereum, or a case cannot run here yet: the one table of the
 * cases left out, each by the first rule that applies to it. Everything else runs, through an
 * executor with Ethereum's fee rules (`FeeRules.ETHEREUM`, see `executorFor`).
 */
export const RULES: readonly Rule[] = [
  {
    name: "chain: no blob transactions (EIP-4844, type 3)",
    applies: (c) => c.txType === "blob",
    expected: { default: 389, slow: 389 },
  },
  {
    name: "chain: typed transactions not accepted yet (EIP-2930 type 1, EIP-1559 type 2; RSKIP546 adds them)",
    applies: (c) => c.txType === "eip2930" || c.txType === "eip1559",
    expected: { default: 2_224, slow: 2_224 },
  },
  {
    name: "chain: no point-evaluation precompile 0x0a (the test calls the address it names, 0x0a)",
    applies: (c) => POINT_EVALUATION_FILES.has(c.file) && firstArgument(c) === 0x0an,
    expected: { default: 23, slow: 23 },
  },
  {
    name: "slow by design (NODEX_SLOW_STATE_TESTS=1 runs them)",
    applies: (c) => !SLOW_STATE_TESTS && SLOW_CATEGORIES.has(c.category),
    expected: { default: 5_306, slow: 0 },
  },
  {
    name: "slow here, over 1 s a case on one of the paths (NODEX_SLOW_STATE_TESTS=1 runs them)",
    applies: (c) => !SLOW_STATE_TESTS && (SLOW_FILES.has(c.file) || SLOW_CASES.has(caseId(c))),
    expected: { default: 30, slow: 0 },
  },
];

/** Tests that call each precompile in turn, named by the first word of their input. */
const POINT_EVALUATION_FILES: ReadonlySet<string> = new Set([
  "stPreCompiledContracts/idPrecomps.json",
  "stPreCompiledContracts/precompsEIP2929Cancun.json",
]);

/** The first ABI word of a case's input (after the 4-byte selector). */
function firstArgument(c: StateTestCase): bigint {
  const data = c.fixture.transaction.data[c.post.indexes.data] ?? "0x";
  return BigInt(`0x${data.slice(10, 74) || "0"}`);
}

/**
 * Cases of the default folders that take more than a second each on one of the three paths
 * (1 to 100 s): loops to 80 million gas, loops of 50,000 calls, BLAKE2 with many rounds, and
 * runs to out of gas that the library then runs again.
 */
const SLOW_CASES: ReadonlySet<string> = new Set([
  "VMTests/vmPerformance/loopExp.json:loopExp[2]",
  "VMTests/vmPerformance/loopExp.json:loopExp[3]",
  "VMTests/vmPerformance/loopExp.json:loopExp[4]",
  "VMTests/vmPerformance/loopExp.json:loopExp[5]",
  "VMTests/vmPerformance/loopExp.json:loopExp[6]",
  "VMTests/vmPerformance/loopExp.json:loopExp[7]",
  "VMTests/vmPerformance/loopExp.json:loopExp[8]",
  "VMTests/vmPerformance/loopMul.json:loopMul[0]",
  "VMTests/vmPerformance/loopMul.json:loopMul[1]",
  "VMTests/vmPerformance/loopMul.json:loopMul[2]",
  "stAttackTest/ContractCreationSpam.json:ContractCreationSpam[0]",
  "stCreateTest/CreateOOGafterMaxCodesize.json:CreateOOGafterMaxCodesize[5]",
  "stPreCompiledContracts2/CALLBlake2f.json:CALLBlake2f[42]",
  "stPreCompiledContracts2/CALLCODEBlake2f.json:CALLCODEBlake2f[42]",
  "stStaticCall/static_Call50000.json:static_Call50000[0]",
  "stStaticCall/static_Call50000.json:static_Call50000[1]",
  "stStaticCall/static_Call50000_ecrec.json:static_Call50000_ecrec[0]",
  "stStaticCall/static_Call50000_ecrec.json:static_Call50000_ecrec[1]",
  "stStaticCall/static_Call50000_identity.json:static_Call50000_identity[0]",
  "stStaticCall/static_Call50000_identity.json:static_Call50000_identity[1]",
  "stStaticCall/static_Call50000_identity2.json:static_Call50000_identity2[0]",
  "stStaticCall/static_Call50000_identity2.json:static_Call50000_identity2[1]",
  "stStaticCall/static_Call50000_rip160.json:static_Call50000_rip160[0]",
  "stStaticCall/static_Call50000_rip160.json:static_Call50000_rip160[1]",
  "stStaticCall/static_LoopCallsThenRevert.json:static_LoopCallsThenRevert[0]",
  "stStaticCall/static_LoopCallsThenRevert.json:static_LoopCallsThenRevert[1]",
  "stStaticCall/static_Return50000_2.json:static_Return50000_2[0]",
]);
/** Files whose every case is slow here (three tests of 4 to 10 s each). */
const SLOW_FILES: ReadonlySet<string> = new Set([
  "Pyspecs/cancun/eip1153_tstore/run_until_out_of_gas.json",
]);

/** The first rule that leaves `c` out, or `undefined` when it runs. */
export function ruleFor(c: StateTestCase): Rule | undefined {
  return RULES.find((rule) => rule.applies(c));
}

/** The network the cases run on: their transactions are signed for chain id 1. */
const NETWORK: NetworkPreset = { ...NETWORKS.mainnet, chainId: 1 };

/**
 * The three ways the executor runs a transaction: the interpreter of transactions first (the
 * default), the library with the patched loop and opcode handlers (`libraryTransactions`), and
 * the library with its own opcode and gas handlers (`libraryOpcodes`). `libraryCalls` changes
 * only `call`, so it would run these cases exactly as the default does.
 */
export const MODES = {
  fast: {},
  libraryTransactions: { libraryTransactions: true },
  libraryOpcodes: { libraryTransactions: true, libraryOpcodes: true },
} as const;
export type Mode = keyof typeof MODES;

/** An executor with Ethereum's fee rules, in `mode`. */
export function executorFor(mode: Mode): Executor {
  return new Executor(NETWORK, { ...MODES[mode], feeRules: FeeRules.ETHEREUM });
}

const big = (hex: string) => BigInt(hex);

function blockOf(fixture: Fixture): BlockContext {
  const env = fixture.env;
  return {
    number: big(env.currentNumber),
    timestamp: big(env.currentTimestamp),
    coinbase: hexToBytes(env.currentCoinbase) as Address,
    gasLimit: big(env.currentGasLimit),
    // PREVRANDAO answers the block's difficulty on the chain; Cancun's blocks give it as `currentRandom`.
    difficulty: big(env.currentRandom ?? env.currentDifficulty),
    minimumGasPrice: 0n,
    baseFeePerGas: big(env.currentBaseFee ?? "0x0"),
    blobBaseFee: blobBaseFee(big(env.currentExcessBlobGas ?? "0x0")),
  };
}

/** EIP-4844's blob base fee for a block's excess blob gas (Cancun's update fraction). */
function blobBaseFee(excessBlobGas: bigint): bigint {
  // fake_exponential(MIN_BLOB_BASE_FEE = 1, excess, BLOB_BASE_FEE_UPDATE_FRACTION = 3338477)
  const denominator = 3_338_477n;
  let i = 1n;
  let output = 0n;
  let accumulator = denominator;
  while (accumulator > 0n) {
    output += accumulator;
    accumulator = (accumulator * excessBlobGas) / (denominator * i);
    i += 1n;
  }
  return output / denominator;
}

function slotBytes(hex: string): Uint8Array {
  const out = new Uint8Array(32);
  const bytes = hexToBytes(`0x${BigInt(hex).toString(16).padStart(64, "0")}`);
  out.set(bytes);
  return out;
}

/** The keccak-256 of the RLP of a log list, as the fixtures' `logs`. */
export function logsHash(logs: readonly Log[]): string {
  return bytesToHex(keccak256(rlpEncode(logs.map((l) => [l.address, [...l.topics], l.data]))));
}

/** A test's `pre` written into a new state of `db`: the state and its root. */
async function preState(db: Database, fixture: Fixture) {
  const state = await WorldState.open(new NodeStore(db));
  for (const [hex, account] of Object.entries(fixture.pre)) {
    const address = hexToBytes(hex) as Address;
    await state.setNonce(address, big(account.nonce));
    await state.setBalance(address, big(account.balance));
    if (account.code !== "0x") await state.setCode(address, hexToBytes(account.code));
    for (const [slot, value] of Object.entries(account.storage)) {
      if (big(value) !== 0n) await state.setStorage(address, slotBytes(slot), slotBytes(value));
    }
  }
  return { state, root: await state.commit() };
}

/** Runs the cases in order on `executor`: each case's failure, by its id (none when all pass). */
export async function runCases(
  executor: Executor,
  db: Database,
  cases: readonly StateTestCase[],
): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  let pre: { fixture: Fixture; state: WorldState; root: Uint8Array } | undefined;
  for (const c of cases) {
    if (pre?.fixture !== c.fixture)
      pre = { fixture: c.fixture, ...(await preState(db, c.fixture)) };
    else await pre.state.manager.setStateRoot(pre.root);
    const failure = await runCase(executor, pre.state, c);
    if (failure !== undefined) failures.set(caseId(c), failure);
  }
  return failures;
}

/** One case on `state` (at the test's `pre`): why it fails, or `undefined`. */
async function runCase(
  executor: Executor,
  state: WorldState,
  c: StateTestCase,
): Promise<string | undefined> {
  let outcome: TransactionOutcome | undefined;
  let refused: string | undefined;
  try {
    let tx: SignedTransaction;
    try {
      tx = decodeTransaction(hexToBytes(c.post.txbytes));
    } catch (error) {
      throw new RefusedError(`decode: ${(error as Error).message}`);
    }
    outcome = await executor.executeTransaction(state, tx, blockOf(c.fixture), 0n);
  } catch (error) {
    if (error instanceof RefusedError) refused = error.message;
    else if (error instanceof ExecutionError) refused = `${error.code}: ${error.message}`;
    else return `threw ${(error as Error).stack ?? String(error)}`;
  }
  const root = bytesToHex(await state.commit());
  const expected = c.post.expectException;
  if (expected !== undefined && refused === undefined) return `ran, expected ${expected}`;
  if (expected === undefined && refused !== undefined) return `refused: ${refused}`;
  if (root !== c.post.hash) return `state root ${root}, expected ${c.post.hash}`;
  if (outcome !== undefined && logsHash(outcome.logs) !== c.post.logs)
    return `logs hash ${logsHash(outcome.logs)}, expected ${c.post.logs}`;
  return undefined;
}

class RefusedError extends Error {}

/** Per category of cases: generous, never a measure of speed (the slowest takes some 20 s). */
const CATEGORY_TIMEOUT_MS = 900_000;

/**
 * The cases each half runs, by default and with `NODEX_SLOW_STATE_TESTS=1` (those each rule
 * leaves out are in `RULES`): written here, so that no case drops out unseen.
 */
export const EXPECTED_RUN: Readonly<Record<"default" | "slow", Readonly<Record<Half, number>>>> = {
  default: { 1: 4_812, 2: 8_181 },
  slow: { 1: 4_815, 2: 13_514 },
};

/** The expected counts of this run (slow folders on or off): cases run per half, left out per rule. */
export function expected(): { run: Record<Half, number>; leftOut: Record<string, number> } {
  const which = SLOW_STATE_TESTS ? "slow" : "default";
  return {
    run: { ...EXPECTED_RUN[which] },
    leftOut: Object.fromEntries(RULES.map((rule) => [rule.name, rule.expected[which]])),
  };
}

/**
 * The tests of one half in one mode: a test per folder, which fails with the cases that fail
 * (their id and why), and a last one that checks how many cases ran.
 */
export function describeStateTests(mode: Mode, half: Half): void {
  const folders = new Set(Object.keys(CATEGORIES).filter((c) => halfOf(c) === half));
  const running = loadCases(folders).filter((c) => ruleFor(c) === undefined);
  const byCategory = new Map<string, StateTestCase[]>();
  for (const c of running) {
    const list = byCategory.get(c.category);
    if (list === undefined) byCategory.set(c.category, [c]);
    else list.push(c);
  }
  describe(`Ethereum state tests (Cancun), ${mode}, half ${half}`, () => {
    const executor = executorFor(mode);
    let dir: string;
    let db: Database;
    let ran = 0;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "nodex-state-tests-"));
      db = await Database.open(join(dir, "db"));
    });
    afterAll(async () => {
      await db?.close();
      rmSync(dir, { recursive: true, force: true });
    });
    for (const [category, cases] of byCategory) {
      it(
        `${category} (${cases.length} cases)`,
        async () => {
          const failures = await runCases(executor, db, cases);
          ran += cases.length;
          expect(Object.fromEntries(failures)).toEqual({});
        },
        CATEGORY_TIMEOUT_MS,
      );
    }
    it(`ran ${expected().run[half]} cases`, () => {
      expect(running.length).toBe(expected().run[half]);
      expect(ran).toBe(running.length);
    });
  });
}
