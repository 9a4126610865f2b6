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
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writevSync,
} from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";

/**
 * Where an answer is: its segment, its offset and length in it, and the CRC-32 of its bytes. When `chunked`, what
 * is at `at` is the answer's recipe (its chunks' places in the same segment, see `append`), and the CRC-32 is that
 * of the whole answer as reassembled.
 */
export interface AnswerRef {
  file: number;
  at: number;
  len: number;
  crc: number;
  chunked?: boolean;
}

/** Options of an answer log. */
export interface AnswerLogOptions {
  /** A segment rolls over once it is this long (default 64 MiB). */
  segmentBytes?: number;
  /**
   * The disk the log may take, every process's segments together (default 1 GiB): once they reach it, `full()`
   * says so and new calls that would store an answer are refused before they start (D67). Answers already promised
   * (calls running) are still written, so the log may pass it by what is in flight.
   */
  quotaBytes?: number;
  /** After a write failed for want of space (`ENOSPC`, `EDQUOT`), how long `full()` says so (default 10 s). */
  fullForMs?: number;
  /** Answers at least this long are stored as content-addressed chunks (default 512 bytes); shorter ones as they are. */
  chunkFrom?: number;
  /** The clock of `fullForMs` and of the usage's rescans (tests). */
  now?: () => number;
}

/** Why the log takes no new answers: its quota is reached, or the disk was found full. */
export interface LogFull {
  reason: "quota" | "disk_full";
  message: string;
}

const SEGMENT = /^(\d{8})\.answers$/;
/** Chunks of an answer: at least this long (but the last)… */
const CHUNK_MIN = 64;
/** …at most this long… */
const CHUNK_MAX = 2048;
/** …and cut where the rolling hash's low bits are all zero (about every 256 bytes past the minimum). */
const CHUNK_MASK = 0xff;
/** Bytes of chunks kept in memory per segment to find repeats (the oldest indexed is forgotten first). */
const CHUNK_MEMORY = 4 * 1024 * 1024;
/** The usage of the folder is read again (every process's segments) at most this often. */
const RESCAN_MS = 1000;
/** The gear table of the rolling hash: 256 fixed pseudo-random 32-bit words (xorshift from a fixed seed). */
const GEAR = (() => {
  const t = new Uint32Array(256);
  let x = 0x9e3779b9;
  for (let i = 0; i < 256; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    t[i] = x >>> 0;
  }
  return t;
})();

/**
 * Where the content-defined chunks of `b` end (gear rolling hash, as FastCDC): a cut depends only on the bytes just
 * before it, so two answers that differ in a few places (a request id, a balance) share every chunk between them.
 */
export function chunkEnds(b: Uint8Array): number[] {
  const ends: number[] = [];
  const n = b.length;
  let start = 0;
  while (start < n) {
    const last = Math.min(n, start + CHUNK_MAX);
    let cut = last;
    let h = 0;
    for (let i = start + CHUNK_MIN; i < last; i++) {
      h = ((h << 1) + GEAR[b[i]!]!) >>> 0;
      if ((h & CHUNK_MASK) === 0) {
        cut = i + 1;
        break;
      }
    }
    ends.push(cut);
    start = cut;
  }
  return ends;
}

/** Unsigned LEB128 of `n` onto `out`. */
function putVarint(out: number[], n: number): void {
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}

/** The (offset, length) pairs of a recipe, or `null` when its bytes are not one. */
function readRecipe(b: Uint8Array): number[] | null {
  const out: number[] = [];
  let i = 0;
  while (i < b.length) {
    let n = 0;
    let scale = 1;
    for (;;) {
      if (i >= b.length || scale > 2 ** 49) return null;
      const byte = b[i++]!;
      n += (byte & 0x7f) * scale;
      scale *= 0x80;
      if (byte < 0x80) break;
    }
    out.push(n);
  }
  return out.length % 2 === 0 ? out : null;
}

/** A chunk stored in the segment being appended to: where, and its bytes (to compare before sharing it). */
interface Chunk {
  at: number;
  bytes: Buffer;
}

/** The segment being appended to. */
interface Segment {
  file: number;
  fd: number;
  /** Bytes written to it. */
  size: number;
  /** Where the next answer appended goes (its length once the queued answers are written). */
  end: number;
  /** Its chunks by content (CRC-32 × 2^21 + length; the bytes are compared on a hit), oldest first. */
  chunks: Map<number, Chunk>;
  /** The same chunks by offset (reads of this segment's answers from memory). */
  byAt: Map<number, Buffer>;
  /** Bytes of `chunks`. */
  chunkBytes: number;
}
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
  /** The disk the log may take (see `AnswerLogOptions`). */
  quotaBytes: number;
  /** How long a write that found the disk full makes `full()` say so (see `AnswerLogOptions`). */
  fullForMs: number;
  private readonly chunkFrom: number;
  private readonly now: () => number;
  /** How the queued answers are written (`writevSync`; tests make it fail as a full disk would). */
  writev: (fd: number, buffers: readonly NodeJS.ArrayBufferView[], position: number) => number = writevSync;
  /** The bytes of the folder's segments at the last scan, when that was, and what this log wrote since. */
  private usage = { bytes: 0, at: Number.NEGATIVE_INFINITY, since: 0 };
  /** Until when a write that found the disk full makes `full()` say so. */
  private diskFullUntil = Number.NEGATIVE_INFINITY;
  /** The segment being appended to (opened on the first append). */
  private current: Segment | null = null;
  /** Answers appended and not yet written. */
  private queued: Uint8Array[] = [];
  /** Descriptors of segments opened to read. */
  private readonly readers = new Map<number, number>();
  /** Called with the number of each segment this log opens to append to (before anything points into it). */
  onOpen: ((file: number) => void) | null = null;

  constructor(dir: string, options: AnswerLogOptions = {}) {
    this.dir = dir;
    this.segmentBytes = options.segmentBytes ?? 64 * 1024 * 1024;
    this.quotaBytes = options.quotaBytes ?? 1024 * 1024 * 1024;
    this.fullForMs = options.fullForMs ?? 10_000;
    this.chunkFrom = options.chunkFrom ?? 512;
    this.now = options.now ?? Date.now;
  }

  /**
   * The bytes of every segment in the folder (every process's): read from the folder at most once a second, plus
   * what this log wrote since.
   */
  usedBytes(): number {
    const now = this.now();
    if (now - this.usage.at >= RESCAN_MS || now < this.usage.at) this.rescan(now);
    return this.usage.bytes + this.usage.since;
  }

  private rescan(now: number): void {
    let bytes = 0;
    for (const file of this.segments()) {
      try {
        bytes += statSync(join(this.dir, segmentName(file))).size;
      } catch {
        // deleted meanwhile
      }
    }
    this.usage = { bytes, at: now, since: 0 };
  }

  /**
   * Whether the log takes no new answers (D67): a write found the disk full less than `fullForMs` ago, or the
   * segments reached `quotaBytes`. `null` when it takes them.
   */
  full(): LogFull | null {
    if (this.now() < this.diskFullUntil)
      return { reason: "disk_full", message: "The disk that keeps answers for Idempotency-Key replays is full." };
    const used = this.usedBytes();
    if (used >= this.quotaBytes)
      return {
        reason: "quota",
        message: `The answers kept for Idempotency-Key replays reached their quota (${used} of ${this.quotaBytes} bytes); space comes back as they expire.`,
      };
    return null;
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
  private open(): Segment {
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
    this.current = { file, fd, size: 0, end: 0, chunks: new Map(), byAt: new Map(), chunkBytes: 0 };
    this.onOpen?.(file);
    return this.current;
  }

  /**
   * Gives an answer its place and queues it; it is written by the next `flush`. An answer of at least `chunkFrom`
   * bytes is cut into content-defined chunks (`chunkEnds`); a chunk this segment already holds (same CRC-32 and
   * length, then the same bytes) is not written again, and the answer's place is its recipe: the offset and length
   * of each chunk, in the same segment (so a segment still needed holds everything its records need). Answers that
   * repeat but for a request id, a time and a balance then take a few hundred bytes instead of all of theirs.
   */
  append(body: Uint8Array): AnswerRef {
    const seg = this.current ?? this.open();
    const crc = crc32(body);
    if (body.byteLength < this.chunkFrom) {
      const ref = { file: seg.file, at: seg.end, len: body.byteLength, crc };
      this.queue(seg, body);
      return ref;
    }
    const recipe: number[] = [];
    let start = 0;
    for (const end of chunkEnds(body)) {
      const part = body.subarray(start, end);
      const key = crc32(part) * 2 ** 21 + part.byteLength;
      const known = seg.chunks.get(key);
      let at: number;
      if (known?.bytes.equals(part)) at = known.at;
      else {
        const bytes = Buffer.from(part); // a copy: the index must not keep the whole answer alive
        at = seg.end;
        this.queue(seg, bytes);
        if (known) this.forget(seg, key, known);
        seg.chunks.set(key, { at, bytes });
        seg.byAt.set(at, bytes);
        seg.chunkBytes += bytes.byteLength;
        while (seg.chunkBytes > CHUNK_MEMORY) {
          const [oldKey, old] = seg.chunks.entries().next().value!;
          this.forget(seg, oldKey, old);
        }
      }
      putVarint(recipe, at);
      putVarint(recipe, part.byteLength);
      start = end;
    }
    const bytes = Buffer.from(recipe);
    const ref = { file: seg.file, at: seg.end, len: bytes.byteLength, crc, chunked: true };
    this.queue(seg, bytes);
    return ref;
  }

  private queue(seg: Segment, bytes: Uint8Array): void {
    this.queued.push(bytes);
    seg.end += bytes.byteLength;
  }

  private forget(seg: Segment, key: number, chunk: Chunk): void {
    seg.chunks.delete(key);
    seg.byAt.delete(chunk.at);
    seg.chunkBytes -= chunk.bytes.byteLength;
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
        const n = this.writev(seg.fd, remaining(buffers, written), seg.size + written);
        if (n <= 0) throw new Error(`answer log: nothing written to ${segmentName(seg.file)}`);
        written += n;
      }
      seg.size += written;
      // Deleted meanwhile by another process's sweep: these bytes are unreachable, so the records must not commit.
      if (fstatSync(seg.fd).nlink === 0)
        throw new Error(`answer log: ${segmentName(seg.file)} was deleted while being appended to`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOSPC" || code === "EDQUOT") this.diskFullUntil = this.now() + this.fullForMs;
      this.usage.since += written;
      this.retire();
      throw e;
    }
    this.usage.since += written;
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
    if (!ref.chunked) {
      const out = this.bytesAt(ref.file, ref.at, ref.len);
      return out && crc32(out) === ref.crc ? out : null;
    }
    const recipe = this.bytesAt(ref.file, ref.at, ref.len);
    const pairs = recipe && readRecipe(recipe);
    if (!pairs) return null;
    const own = this.current?.file === ref.file ? this.current.byAt : null;
    const parts: Buffer[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const at = pairs[i]!;
      const len = pairs[i + 1]!;
      const cached = own?.get(at);
      const part = cached && cached.byteLength === len ? cached : this.bytesAt(ref.file, at, len);
      if (!part) return null;
      parts.push(part);
    }
    const out = Buffer.concat(parts);
    return crc32(out) === ref.crc ? out : null;
  }

  /** `len` bytes at `at` of segment `file`, or `null` when they are not all there. */
  private bytesAt(file: number, at: number, len: number): Buffer | null {
    let fd = this.readers.get(file);
    try {
      if (fd === undefined) {
        fd = openSync(join(this.dir, segmentName(file)), "r");
        if (this.readers.size >= MAX_READERS) {
          const [file, oldest] = this.readers.entries().next().value!;
          this.readers.delete(file);
          closeQuietly(oldest);
        }
        this.readers.set(file, fd);
      }
      const out = Buffer.allocUnsafe(len);
      let got = 0;
      while (got < len) {
        const n = readSync(fd, out, got, len - got, at + got);
        if (n === 0) return null;
        got += n;
      }
      return out;
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
    if (deleted > 0) this.rescan(this.now());
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
