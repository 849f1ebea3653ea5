// An options object checked from a table: each field's rule, read by one function that says what is wrong
// in the words the hand-written checks use (invalidArgument, rejectUnknownOptions, validateInteger), so a
// type moved onto a table refuses the same values with the same messages. The table names every field, and
// the field order is the order of the checks. See docs/benchmarks.md "Option checking" for why a table and
// not a schema library.
import { invalidArgument, rejectUnknownOptions, validateInteger } from './validation.js'

/** How one field is checked. An absent field is `undefined`, or `default` when the rule has one. */
export type FieldRule =
  /** An integer from min to max; `label` is the name validateInteger's message starts with. */
  | {
      readonly integer: readonly [min: number, max: number]
      readonly label: string
      readonly default?: number
    }
  /** One of `values`, absent included only when `values` holds undefined; `must` ends the message. */
  | { readonly oneOf: readonly unknown[]; readonly must: string }
  /** Taken as given: its own check runs later (after a check that must come first). */
  | { readonly later: true }

/** The rules of an options object: its name in messages, what it must be, and its fields in check order. */
export interface OptionTable<Fields extends string = string> {
  /** The parameter's name, `options.checkpoints`: every message starts with it. */
  readonly param: string
  /** What the parameter must be, for a value that is not an object. */
  readonly shape: string
  readonly fields: Readonly<Record<Fields, FieldRule>>
}

/**
 * Checks `value` against `table`: an object (else `<param> <shape>`), no field the table does not name, then
 * each field by its rule, in the table's order. Returns the fields, defaults filled in.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkOptionTable<Fields extends string>(
  table: OptionTable<Fields>,
  value: unknown,
): Record<Fields, unknown> {
  if (typeof value !== 'object' || value === null) throw invalidArgument(table.param, table.shape)
  rejectUnknownOptions(table.param, value, Object.keys(table.fields))
  const given = value as Record<string, unknown>
  const checked = {} as Record<Fields, unknown>
  for (const name of Object.keys(table.fields) as Fields[]) {
    checked[name] = checkField(`${table.param}.${name}`, table.fields[name], given[name])
  }
  return checked
}

function checkField(param: string, rule: FieldRule, value: unknown): unknown {
  if ('later' in rule) return value
  if ('oneOf' in rule) {
    if (!rule.oneOf.includes(value)) throw invalidArgument(param, rule.must)
    return value
  }
  if (value === undefined && rule.default === undefined) return undefined
  return validateInteger(rule.label, value ?? rule.default, rule.integer[0], rule.integer[1])
}
