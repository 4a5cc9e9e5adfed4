import "./polyfills.js";

export { P2PError, P2PErrorCode } from "./errors.js";
export { NODE_KEY_FILE, NodeKey } from "./nodeKey.js";
