/**
 * Values PostgreSQL cannot hold as text. PostgreSQL refuses a NUL (`\u0000`) in a `text` parameter (SQLSTATE
 * 22021, `invalid byte sequence for encoding "UTF8": 0x00`), and the driver sends a lone surrogate as U+FFFD, which
 * would look up another string than the one given. No row was ever stored under such a value, so a lookup by a
 * user-supplied string (a path id, an email, a key id) that is not storable finds nothing, without asking the
 * database: the answer is the embedded store's (404 and the like), not a 500.
 */

/** A NUL, or a surrogate that is not half of a pair (a code point of its own in a `u` pattern). */
const NOT_STORABLE = /[\0\p{Cs}]/u;

/**
 * Whether every value is text PostgreSQL can store and match as given: no NUL and no lone surrogate. A lookup by a
 * value that is not finds nothing; the PostgreSQL lookups by user-supplied strings check it first.
 */
export function storable(...values: readonly string[]): boolean {
  for (const v of values) if (NOT_STORABLE.test(v)) return false;
  return true;
}
