/**
 * D186: on PostgreSQL a data call's key is not read on its own before the call is admitted when this process read
 * it before and found it valid; the statement that admits the call checks the key's row again, in the snapshot in
 * which it claims and holds. This is what that statement throws when the row no longer lets the key call (revoked,
 * exposed, expired, suspended, its account suspended, or without `read_data`): nothing was claimed or held, and
 * the HTTP layer reads the key again to answer exactly as authentication would have.
 */
export class KeyChanged extends Error {
  constructor(keyId: string) {
    super(`key ${keyId} changed since this process read it`);
    this.name = "KeyChanged";
  }
}
