// Files the host has just replaced with an upload: the upload streams into a temp file that is then renamed
// over the path (sandbox-fs.ts), so a watch of the directory sees a rename. envd writes the file in place, and
// E2B's watchers see it written: `write`, after `create` when the file is new. A watcher that finds a note for
// the path of a rename reports that instead (envd-filesystem.ts).

/** How long after its rename a watcher may still take an event for the upload (events can queue behind a burst). */
const NOTE_MS = 10_000

/** One upload's rename. */
export interface UploadNote {
  /** Sandbox path of the file, its parents' links resolved. */
  path: string
  /** True when it replaced a file; false when the upload made it. */
  existed: boolean
  /** Epoch ms of the rename. */
  at: number
}

/** A sandbox's recent uploads by path. */
export class UploadNotes {
  readonly #notes = new Map<string, UploadNote>()

  /** Records an upload that is about to be renamed into place at `path`. */
  note(path: string, existed: boolean): void {
    const now = Date.now()
    for (const [key, old] of this.#notes) if (now - old.at > NOTE_MS) this.#notes.delete(key)
    this.#notes.set(path, { path, existed, at: now })
  }

  /** The latest upload to `path` in the last few seconds, if any. */
  find(path: string): UploadNote | undefined {
    const note = this.#notes.get(path)
    return note && Date.now() - note.at <= NOTE_MS ? note : undefined
  }
}
