#!/usr/bin/env node
// Install step: nothing to do when a prebuilt binary loads (the published package ships one for
// linux-x64-gnu; other platforms get theirs from a corepool-<triple> package). Otherwise build
// from source with cargo, which needs Rust (https://rustup.rs).
'use strict';
const path = require('node:path');
const { spawnSync } = require('node:child_process');

try {
  require('../index.js');
  process.exit(0);
} catch {
  // No binary for this platform: build one.
}
const r = spawnSync(process.execPath, [path.join(__dirname, 'build.js')], { stdio: 'inherit' });
process.exit(r.status ?? 1);
