export { type ErrorContext, fromE2BError } from './errors.js'
export { createE2BProvider, type E2BProvider, type E2BProviderOptions } from './provider.js'
