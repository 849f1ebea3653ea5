// The seam between the host (server, runtime) and the code interpreter (kernels, /execute, /contexts).
// The host owns sandboxes and their processes; the interpreter owns kernels, which it starts through the
// host's spawner so that they live inside the sandbox: same isolation, frozen by a pause, killed when the
// sandbox's processes are stopped.
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import type { IncomingMessage, ServerResponse } from 'node:http'

/** Starts processes inside one sandbox (its namespaces, its cgroup/freezer, its env). */
export interface KernelSpawner {
  /**
   * Spawns `command args` inside the sandbox with piped stdio. `cwd` is a sandbox path. The process is frozen
   * with the sandbox, and killed when the sandbox's processes are stopped or the sandbox is killed.
   */
  spawn(
    command: string,
    args: string[],
    options: { cwd: string; env: Record<string, string> },
  ): ChildProcessWithoutNullStreams
}

/** What the host gives the interpreter of one sandbox. */
export interface InterpreterHost {
  /** The sandbox id (for logs and events). */
  sandboxId: string
  /** Spawns inside the sandbox. */
  spawner: KernelSpawner
  /** Sandbox path where `packages/local-e2b/kernels/` is visible (read-only), e.g. `/opt/sandkeep/kernels`. */
  kernelDir: string
  /** The sandbox's home, default cwd of contexts (`/home/user`). */
  homeDir: string
  /** Environment variables of the sandbox (from create's `envVars`), applied to every kernel. */
  envs: Record<string, string>
  /** Reports interpreter events (kernel started/exited, cell run) into the host's event log. */
  emit?: (type: string, detail: Record<string, unknown>) => void
}

/** The code interpreter of one sandbox: the server behind port 49999. */
export interface CodeInterpreter {
  /**
   * Serves one request addressed to port 49999 (`POST /execute`, `GET|POST /contexts`,
   * `POST /contexts/{id}/restart`, `DELETE /contexts/{id}`, `GET /health`). The host has already checked the
   * access token, resumed the sandbox if needed, and read the body (`body`).
   */
  handle(request: IncomingMessage, response: ServerResponse, body: Buffer): Promise<void>
  /**
   * The sandbox's processes were stopped (cold-boot resume, processes-mode pause, dropped memory, host
   * restart): forget every kernel; contexts keep their ids and the next cell cold-starts a fresh kernel.
   */
  reset(): void
  /** The sandbox is being killed: stop every kernel. */
  close(): Promise<void>
  /**
   * The sandbox is being killed: drop the connection of every `/execute` in flight (no error line, no end
   * line), as E2B does when the sandbox's machine goes away.
   */
  dropRequests(): void
}

/** Factory exported by `./index.ts`. */
export type CreateCodeInterpreter = (host: InterpreterHost) => CodeInterpreter
