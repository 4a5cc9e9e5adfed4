import { describeStateTests } from "./stateTests.js";

describeStateTests("libraryOpcodes", 2);
