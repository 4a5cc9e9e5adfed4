import { describeStateTests } from "./stateTests.js";

describeStateTests("libraryTransactions", 1);
