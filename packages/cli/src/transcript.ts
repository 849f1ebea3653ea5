// The transcript module's entry, wiring only: the format (transcript-schema.ts), finding and reading files
// (transcript-load.ts), problems in plain words (transcript-problems.ts). Tool inputs are checked against the
// tools' schemas by transcript-tool-inputs.ts, loaded lazily by `sandkeep demo`.
export {
  defaultTranscriptPath,
  loadTranscript,
  parseTranscript,
  resolveTranscriptPath,
  transcriptsDir,
} from './transcript-load.js'
export { TranscriptError } from './transcript-problems.js'
export {
  MAIN_CONVERSATION,
  TRANSCRIPT_TOOLS,
  type Transcript,
  type TranscriptBranch,
  type TranscriptHealthCheck,
  type TranscriptToolCall,
  type TranscriptTurn,
  transcriptJsonSchema,
} from './transcript-schema.js'
