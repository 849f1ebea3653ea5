// The notice to the model is @sandkeep/agent's, the one every sandkeep adapter gives: what a resume lost (or
// where a rewind or fork set the sandbox back to) and what to do about it. Re-exported under this package's
// public name.
export { stateLostNotice } from '@sandkeep/agent'
