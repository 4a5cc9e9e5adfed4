import "./polyfills.js";

export { P2PError, P2PErrorCode } from "./errors.js";
