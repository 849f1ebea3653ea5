#!/usr/bin/env node
console.error('sandkeep-local-e2b: not built yet')
process.exit(1)
