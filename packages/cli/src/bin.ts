#!/usr/bin/env node
console.error('sandkeep: the CLI is not built yet')
process.exit(1)
