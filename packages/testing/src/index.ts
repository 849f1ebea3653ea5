// Test doubles and conformance suites for users of @sandkeep/core. Loads no test runner: the suites take the
// runner's functions as parameters (or find the running vitest's), so plain Node can import this.

export * from './mock-provider.js'
export * from './provider-conformance.js'
export * from './session-store-conformance.js'
export * from './store-conformance/index.js'
export * from './test-api.js'
