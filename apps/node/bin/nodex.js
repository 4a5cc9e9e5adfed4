#!/usr/bin/env node
// The installed `nodex` command: runs the built CLI (`npm run build` produces dist/).
import "../dist/main.js";
