// What the interpreter's requests carry, checked: the language (E2B's names and aliases), env_vars, cwd.
import { existsSync } from 'node:fs'
import { HttpError } from '../http.js'
import { JAVA, JSHELL, type KernelLanguage, RSCRIPT } from './kernel.js'

const MAX_CWD_LENGTH = 4096
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/

export interface LanguageChoice {
  /** The language reported to the client (E2B's normalized name). */
  language: string
  kernel: KernelLanguage
}

/**
 * E2B's language names and aliases (`js`, `ts`) mapped to the kernels shipped here. A language without a
 * kernel gets E2B's answer for one its Jupyter does not have: 500, "Failed to create context: …", and so do R
 * on a machine without Debian's R and Java on one without a JDK.
 */
export function chooseLanguage(value: unknown): LanguageChoice {
  if (value === undefined || value === null || value === '') return { language: 'python', kernel: 'python' }
  if (typeof value !== 'string') throw new HttpError(400, 'language must be a string')
  const name = value.trim().toLowerCase()
  switch (name) {
    case 'python':
    case 'python3':
    case 'py':
      return { language: 'python', kernel: 'python' }
    case 'javascript':
    case 'js':
    case 'node':
    case 'nodejs':
      return { language: 'javascript', kernel: 'javascript' }
    // TypeScript cells run on the JavaScript kernel, their types stripped first (by Debian's node-typescript
    // when the machine has it; Node 20 in the sandbox has no type stripping of its own).
    case 'typescript':
    case 'ts':
      return { language: 'typescript', kernel: 'typescript' }
    case 'bash':
    case 'sh':
    case 'shell':
      return { language: 'bash', kernel: 'bash' }
    case 'r':
      if (existsSync(RSCRIPT)) return { language: 'r', kernel: 'r' }
      throw new HttpError(
        500,
        `Failed to create context: this machine has no R (${RSCRIPT}; apt-get install r-base-core r-cran-jsonlite)`,
      )
    case 'java':
      if (existsSync(JAVA) && existsSync(JSHELL)) return { language: 'java', kernel: 'java' }
      throw new HttpError(500, 'Failed to create context: this machine has no JDK (/usr/bin/java and jshell)')
    default:
      throw new HttpError(
        500,
        `Failed to create context: local-e2b has no kernel for ${JSON.stringify(name.slice(0, 64))}; its kernels are python, javascript (also for typescript), bash, r and java`,
      )
  }
}

export function readEnvVars(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value))
    throw new HttpError(400, 'env_vars must be an object')
  const env: Record<string, string> = {}
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    if (!key || key.includes('=') || CONTROL_CHARACTERS.test(key)) {
      throw new HttpError(400, `env_vars has an invalid name ${JSON.stringify(key.slice(0, 64))}`)
    }
    if (typeof entry !== 'string' || entry.includes('\u0000')) {
      throw new HttpError(400, `env_vars.${key.slice(0, 64)} must be a string without NUL characters`)
    }
    env[key] = entry
  }
  return env
}

export function readCwd(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string') throw new HttpError(400, 'cwd must be a string')
  if (!value.startsWith('/') || value.length > MAX_CWD_LENGTH || CONTROL_CHARACTERS.test(value)) {
    throw new HttpError(400, 'cwd must be an absolute sandbox path without control characters')
  }
  return value
}
