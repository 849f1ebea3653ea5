/**
 * The `configurable` key `runConfig` sets to the checkpoint a run starts from (LangGraph unsets
 * `checkpoint_id` in its tasks' configs): the tools read it under durability 'exit', when no step is put.
 */
export const START_CHECKPOINT_KEY = 'sandkeep_start_checkpoint_id'
