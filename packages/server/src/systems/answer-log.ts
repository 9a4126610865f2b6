/**
 * The answer log: the first answers of Idempotency-Keys, kept in append-only segment files next to the database
 * (`<database>-answers/00000001.answers`, …) instead of inside it. An idempotency record then holds where its answer
 * is (segment, offset, length, CRC-32), a few bytes, and SQLite no longer writes each 8 KB answer twice (its WAL,
 * then the database file, as overflow pages). See bench/server/README.md for what that measured.
 *
 * Order and durability. `append` gives the answer its place and queues it; `flush` writes everything queued with one
 * `writev`, and the store calls it just before the commit of the turn whose records point there (see the store's
 * `answers`). A record is therefore never committed before its answer is written. Both are written to the operating
 * system without `fsync` (the database runs `synchronous = NORMAL`): a killed process loses neither. After a power
 * loss, where SQLite itself may lose the last transactions, a record could outlive its answer's bytes: `read` then
 * finds the length or the CRC wrong and answers `null`, which the server answers 500 `internal_error`, charging
 * nothing (the first call was charged; charging again would charge twice).
 *
 * A process appends to a segment of its own, a new one each time it starts, so a torn end of an older one never
 * shifts what comes after. A segment rolls over past `segmentBytes`. Segments are deleted by `sweep` once no record
 * points into them any more and no live process appends to them.
 *
 * Several processes on one database (the HTTP server and `sdgw-mcp`): each opens segments of its own (creating the
 * file exclusively, so two never take the same number), tells `onOpen` (the gateway records it in its owner row, so
 * that another process's `sweep` keeps it), and checks after each write that its segment was not deleted meanwhile:
 * if it was (another process swept it in the moment before this one's row said so), the write fails, the turn rolls
 * back (those calls answer 500 and charge nothing) and the next answer goes to a new segment.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, rmSync, writevSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";

/** Where an answer is: its segment, its offset and length in it, and the CRC-32 of its bytes. */
export interface AnswerRef {
  file: number;
  at: number;
  len: number;
  crc: number;
}

/** Options of an answer log. */
export interface AnswerLogOptions {
  /** A segment rolls over once it is this long (default 64 MiB). */
  segmentBytes?: number;
}

const SEGMENT = /^(\d{8})\.answers$/;
/** Segments kept open for reading at most (the oldest opened is closed first). */
const MAX_READERS = 32;

/** Closes a descriptor; one that fails to close (already gone with a failed write) is dropped all the same. */
function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing left to release
  }
}

/** The name of segment `n`. */
function segmentName(n: number): string {
  return `${String(n).padStart(8, "0")}.answers`;
}

/** Append-only segment files of answers; see the top of this file. */
export class AnswerLog {
  /** The folder of the segments. */
  readonly dir: string;
  private readonly segmentBytes: number;
  /**
   * The segment being appended to (opened on the first append): its descriptor, the bytes written to it, and where
   * the next answer appended goes (its length once the queued answers are written).
   */
  private current: { file: number; fd: number; size: number; end: number } | null = null;
  /** Answers appended and not yet written. */
  private queued: Uint8Array[] = [];
  /** Descriptors of segments opened to read. */
  private readonly readers = new Map<number, number>();
  /** Called with the number of each segment this log opens to append to (before anything points into it). */
  onOpen: ((file: number) => void) | null = null;

  constructor(dir: string, options: AnswerLogOptions = {}) {
    this.dir = dir;
    this.segmentBytes = options.segmentBytes ?? 64 * 1024 * 1024;
  }

  /** The numbers of the segments in the folder, lowest first. */
  segments(): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: number[] = [];
    for (const name of names) {
      const m = SEGMENT.exec(name);
      if (m) out.push(Number(m[1]));
    }
    return out.sort((a, b) => a - b);
  }

  /**
   * Opens a new segment, numbered after every segment in the folder; created exclusively, so when another process
   * took that number a moment before, the next one is tried.
   */
  private open(): { file: number; fd: number; size: number; end: number } {
    mkdirSync(this.dir, { recursive: true });
    let file = (this.segments().at(-1) ?? 0) + 1;
    let fd: number;
    for (;;) {
      try {
        fd = openSync(join(this.dir, segmentName(file)), "wx");
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        file++;
      }
    }
    this.current = { file, fd, size: 0, end: 0 };
    this.onOpen?.(file);
    return this.current;
  }

  /** Gives an answer its place and queues it; it is written by the next `flush`. */
  append(body: Uint8Array): AnswerRef {
    const seg = this.current ?? this.open();
    const ref = { file: seg.file, at: seg.end, len: body.byteLength, crc: crc32(body) };
    this.queued.push(body);
    seg.end += body.byteLength;
    return ref;
  }

  /** Whether answers wait to be written. */
  get pending(): boolean {
    return this.queued.length > 0;
  }

  /**
   * Writes the queued answers (one `writev`). Throws when that fails: the records pointing there must not be
   * committed then. After a failure, or once the segment is past `segmentBytes`, the next append opens a new segment.
   */
  flush(): void {
    const seg = this.current;
    if (!seg || this.queued.length === 0) return;
    const buffers = this.queued;
    this.queued = [];
    const expected = seg.end - seg.size;
    let written = 0;
    try {
      while (written < expected) {
        const n = writevSync(seg.fd, remaining(buffers, written), seg.size + written);
        if (n <= 0) throw new Error(`answer log: nothing written to ${segmentName(seg.file)}`);
        written += n;
      }
      seg.size += written;
      // Deleted meanwhile by another process's sweep: these bytes are unreachable, so the records must not commit.
      if (fstatSync(seg.fd).nlink === 0) throw new Error(`answer log: ${segmentName(seg.file)} was deleted while being appended to`);
    } catch (e) {
      this.retire();
      throw e;
    }
    if (seg.size >= this.segmentBytes) this.retire();
  }

  /** Stops appending to the current segment (it stays readable); the next append opens a new one. */
  private retire(): void {
    const seg = this.current;
    if (!seg) return;
    this.current = null;
    this.queued = [];
    closeQuietly(seg.fd);
  }

  /** The bytes of an answer, or `null` when they are missing or not what was written (see the top of this file). */
  read(ref: AnswerRef): Buffer | null {
    let fd = this.readers.get(ref.file);
    try {
      if (fd === undefined) {
        fd = openSync(join(this.dir, segmentName(ref.file)), "r");
        if (this.readers.size >= MAX_READERS) {
          const [file, oldest] = this.readers.entries().next().value!;
          this.readers.delete(file);
          closeQuietly(oldest);
        }
        this.readers.set(ref.file, fd);
      }
      const out = Buffer.allocUnsafe(ref.len);
      let got = 0;
      while (got < ref.len) {
        const n = readSync(fd, out, got, ref.len - got, ref.at + got);
        if (n === 0) return null;
        got += n;
      }
      return crc32(out) === ref.crc ? out : null;
    } catch {
      return null;
    }
  }

  /**
   * Deletes the segments below `oldest` (the lowest segment a record still points into; every segment but the
   * current one when none does), except those in `inUse` (segments other live processes append to). Returns how
   * many were deleted.
   */
  sweep(oldest: number | null, inUse: Iterable<number> = []): number {
    const keep = new Set(inUse);
    let deleted = 0;
    for (const file of this.segments()) {
      if (file === this.current?.file || keep.has(file) || (oldest !== null && file >= oldest)) continue;
      const fd = this.readers.get(file);
      if (fd !== undefined) {
        closeQuietly(fd);
        this.readers.delete(file);
      }
      rmSync(join(this.dir, segmentName(file)), { force: true });
      deleted++;
    }
    return deleted;
  }

  /** Writes what is queued and closes every descriptor. */
  close(): void {
    try {
      this.flush();
    } finally {
      this.retire();
      for (const fd of this.readers.values()) closeQuietly(fd);
      this.readers.clear();
    }
  }
}

/** The buffers left after the first `skip` bytes (a short write); all of them, as they are, when `skip` is 0. */
function remaining(buffers: Uint8Array[], skip: number): Uint8Array[] {
  if (skip === 0) return buffers;
  const out: Uint8Array[] = [];
  for (const b of buffers) {
    if (skip >= b.byteLength) {
      skip -= b.byteLength;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}
