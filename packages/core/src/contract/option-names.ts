// How core keeps one list of names per options type honest. Each list is written
// `[...] as const satisfies readonly (keyof X)[]`, so a name that is not an option fails to compile, and is
// checked with `NamesEveryOption` below, so an option added to the type but not to its list fails too.

/**
 * `true` when `Names` lists every key of `T`; otherwise an object naming the missing keys, so assigning
 * `true` to it fails to compile and the error says which option the list lacks.
 */
export type NamesEveryOption<T, Names extends readonly (keyof T)[]> = [
  Exclude<keyof T, Names[number]>,
] extends [never]
  ? true
  : { missing: Exclude<keyof T, Names[number]> }
