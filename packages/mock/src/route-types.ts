/** Shapes of the generated route table (src/generated/routes.ts). */
import type { OperationId } from "@sdgw/types";

/** What kind of answer a fixture holds. */
export type FixtureShape =
  | "envelope"
  | "fanout"
  | "targets"
  | "tool"
  | "quote"
  | "running"
  | "error"
  | "file"
  | "other";

/** One fixture of an operation, as listed in fixtures/index.json. */
export interface FixtureRef {
  /** Its path under fixtures/, and its key in `FIXTURES`. */
  readonly file: string;
  /** The HTTP status it is answered with. */
  readonly http: number;
  /** The envelope status (`ok`, `empty`, `error`, `not_supported`, `timeout`, `running`), when it has one. */
  readonly status: string | null;
  /** The error code, when it is an error. */
  readonly code: string | null;
  /** `application/json`, or `text/csv` / `application/x-ndjson` for result files. */
  readonly mediaType: string;
  /** What kind of answer it holds. */
  readonly shape: FixtureShape;
  /** The single-platform envelope's `platform`, when it has one. */
  readonly platform: string | null;
  /** Headers the answer carries (`Retry-After`, `X-Should-Retry`). */
  readonly headers: Readonly<Record<string, string>>;
}

/** One operation of the contract, as the mock serves it. */
export interface MockRoute {
  /** The spec's `operationId`, e.g. `search`, `getResult`. */
  readonly operationId: OperationId;
  /** The HTTP method. */
  readonly method: "GET" | "POST" | "DELETE";
  /** The spec's path, e.g. `/v1/results/{handle}`. */
  readonly path: string;
  /** The MSW path pattern, e.g. `/v1/results/:handle`. */
  readonly mswPath: string;
  /** True for the routes that need no key (`GET /v1/capabilities`, `POST /v1/find`, `GET /openapi.json`). */
  readonly keyless: boolean;
  /** True for the data and tool routes: they need `read_data`, charge credits and may answer 202. */
  readonly charging: boolean;
  /** The tool of a `POST /v1/tools/{tool}` route. */
  readonly tool: string | null;
  /** The HTTP statuses the spec documents for this operation. */
  readonly responses: readonly number[];
  /** The fixture of a plain 200 answer: the first `ok` fixture, else the first JSON 200 fixture. */
  readonly defaultFixture: string | null;
  /** Every fixture of the operation, in the order of fixtures/index.json. */
  readonly fixtures: readonly FixtureRef[];
}

/** A fixture's body: the parsed JSON answer, or the text of a csv or ndjson file. */
export type FixtureBody = unknown;
