/** The error of a database that does not answer (D108), apart from the driver so that the HTTP layer can name it. */

/** The database did not answer (refused, unreachable, timed out, or went away mid-transaction). */
export class DatabaseUnavailable extends Error {
  override readonly name = "DatabaseUnavailable";
}
