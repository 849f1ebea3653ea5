/** One setup step, replayed in order on a fresh sandbox when `rehydrate: 'journal'` is on. */
export type JournalStep =
  | {
      /** A shell command, run with `bash -l -c`; a non-zero exit is a failed step at replay (reported; the rest run). */
      kind: 'command'
      command: string
      /** Working directory inside the sandbox; default the sandbox's home. */
      cwd?: string
    }
  | {
      /** Code run in the interpreter's default context of `language`. */
      kind: 'code'
      code: string
      /** Default `'python'`. */
      language?: CodeLanguage
    }
  | {
      /** A file written with `content` (UTF-8 text). */
      kind: 'file'
      path: string
      content: string
    }

/** Languages the code interpreter runs. */
export type CodeLanguage = 'python' | 'javascript'

/** A journal step as stored: the step plus when it was recorded. */
export interface JournalEntry {
  /** The step. */
  step: JournalStep
  /** When it was recorded, epoch ms. */
  recordedAt: number
}
