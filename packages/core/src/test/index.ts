// Test doubles and conformance suites for users of @sandkeep/core. Filled in by the store and manager work.

export * from './mock-provider.js'
export * from './provider-conformance.js'
export * from './session-store-conformance.js'
