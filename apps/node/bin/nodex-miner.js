#!/usr/bin/env node
// The installed `nodex-miner` command: the reference CPU merged miner (`npm run build` produces dist/).
import "../dist/minerMain.js";
