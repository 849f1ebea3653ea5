import { z } from 'zod'

/** The `setup` input of the tools whose successful calls can be recorded as setup steps. */
export const setupField = z
  .boolean()
  .optional()
  .describe(
    'Set true when this call prepares the environment for later turns (installs a package, downloads or ' +
      'loads data, writes a config): it is then replayed if the sandbox ever has to be rebuilt.',
  )
