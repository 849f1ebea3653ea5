// The shapes of a process's terminal that a sandbox's process table holds; below envd-pty.ts (which makes
// terminals) and sandbox.ts (which keeps them), so neither imports the other.

/** A terminal's size in character cells (envd's PTY.Size). */
export interface PtySize {
  cols: number
  rows: number
}

/** The host's side of one process's terminal. */
export interface PtyTerminal {
  /** Types bytes into the terminal. */
  type(data: Buffer): void
  /** Sets the terminal's size; the command gets SIGWINCH. */
  resize(size: PtySize): void
  /** Sends a signal to the command; false when the relay is gone. */
  signal(signal: NodeJS.Signals): boolean
}
