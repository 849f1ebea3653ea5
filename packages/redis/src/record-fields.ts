/**
 * The fields of a stored record, in the order the Lua scripts read them (HMGET) and reply with them.
 * Keep in step with FIELDS in commands/includes/session.lua.
 */
export const RECORD_FIELDS = [
  'schemaVersion',
  'tenant',
  'conversationId',
  'sandboxId',
  'providerId',
  'template',
  'createdAt',
  'updatedAt',
  'lastTurnStartedAt',
  'lastTurnEndedAt',
  'turnCount',
  'runningSeconds',
  'pausedSeconds',
  'state',
  'pausedAt',
  'mappingToken',
  'manifest',
  'lastTurnUsedSandbox',
  'restore',
  'head',
] as const

/** A script's positional record reply as a field map (null values left out). */
export function recordFieldMap(values: readonly unknown[]): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [index, name] of RECORD_FIELDS.entries()) {
    const value = values[index]
    if (typeof value === 'string') fields[name] = value
  }
  return fields
}
