/** The sandkeep version written into sandbox metadata (`sandkeep.version`) by this copy of `@sandkeep/core`. */
export const SANDKEEP_VERSION = '0.1.0'
