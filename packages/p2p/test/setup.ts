import "../src/polyfills.js";
