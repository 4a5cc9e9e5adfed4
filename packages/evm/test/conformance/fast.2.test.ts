import { describeStateTests } from "./stateTests.js";

describeStateTests("fast", 2);
