/** Marks the objects that are sandkeep sandbox sessions (a registered symbol: works across package copies). */
export const sessionMarker = Symbol.for('sandkeep.ai-sdk.sandbox-session')
