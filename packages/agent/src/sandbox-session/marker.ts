/**
 * Marks the objects that are sandkeep sandbox sessions (a registered symbol: works across package copies). Its
 * key is the one `@sandkeep/ai-sdk` used before the session moved here, so either package's copies know both.
 */
export const sessionMarker = Symbol.for('sandkeep.ai-sdk.sandbox-session')
