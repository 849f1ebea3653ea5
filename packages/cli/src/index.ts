// The CLI's programmatic surface: the transcript format and the scripted model are reusable by examples and
// tests (a chat server that replays a transcript, a custom loop), and `main` runs the CLI in-process.
export { main } from './cli.js'
export { type Command, type CommandContext, ExitCode } from './command.js'
export type { DemoEvent, DemoSetup, FaultName, PauseMode, TurnSummary } from './demo/events.js'
export { FAULT_NAMES, ISOLATIONS, PAUSE_MODES } from './demo/events.js'
export {
  createScriptedModel,
  type ScriptedModelOptions,
  type ScriptPosition,
  scriptPosition,
} from './scripted-model.js'
export {
  defaultTranscriptPath,
  loadTranscript,
  parseTranscript,
  resolveTranscriptPath,
  TRANSCRIPT_TOOLS,
  type Transcript,
  TranscriptError,
  type TranscriptHealthCheck,
  type TranscriptToolCall,
  type TranscriptTurn,
  transcriptsDir,
} from './transcript.js'
