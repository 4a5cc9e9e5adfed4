import { describeStateTests } from "./stateTests.js";

describeStateTests("fast", 1);
