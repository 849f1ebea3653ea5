export { type ErrorContext, fromE2BError } from './errors.js'
export { DEFAULT_MAX_OUTPUT_CHARS } from './output.js'
export { createE2BProvider, type E2BProvider, type E2BProviderOptions } from './provider.js'
