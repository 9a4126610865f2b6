/**
 * The Playground: a form per operation, generated from the contract (generated/forms.ts); a request is checked by
 * @sdgw/validators before it is sent, and an `invalid_params` shows its fix. Tools show the free quote first and
 * run on confirm; a 202 shows its waves and is read by handle until it ends. Calls go out with the session.
 */
import { requestValidators } from "@sdgw/validators";
import type { JSX } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { call, errorText, type Answer } from "../api.ts";
import { FORMS, type FormField, type FormOperation } from "../generated/forms.ts";
import { AnswerView, Prose, plainText } from "../render.tsx";

type Values = Record<string, string | string[] | boolean>;
type Problem = { param?: string; message: string; note?: string; allowed?: string[] };

const label = (f: FormField) => `${f.name}${f.required ? " (required)" : ""}`;
const id = (op: string, f: FormField) => `f-${op}-${f.name.replace(/\W/g, "_")}`;

/** The JSON body of a form's values: empty fields left out, lists one a line. */
export function bodyOf(form: FormOperation, values: Values): { body: Record<string, unknown> } | { problem: Problem } {
  const body: Record<string, unknown> = {};
  for (const f of form.fields) {
    const v = values[f.name];
    if (v === undefined || v === "" || (Array.isArray(v) && v.length === 0) || v === false) continue;
    let out: unknown;
    switch (f.kind) {
      case "integer":
        out = Number(v);
        break;
      case "boolean":
        out = v === true;
        break;
      case "enums":
        out = (v as string[]).includes("all") ? "all" : v;
        break;
      case "list": {
        const lines = String(v)
          .split("\n")
          .map((s) => s.trim())
          .filter(Boolean);
        out = f.single && lines.length === 1 ? lines[0] : lines;
        break;
      }
      case "json":
        try {
          out = JSON.parse(String(v));
        } catch {
          return { problem: { param: f.name, message: `\`${f.name}\` is not valid JSON.` } };
        }
        break;
      default:
        out = v;
    }
    const [head, sub] = f.name.split(".") as [string, string | undefined];
    if (sub) body[head] = { ...(body[head] as object), [sub]: out };
    else body[head] = out;
  }
  return { body };
}

function Field({
  op,
  f,
  values,
  set,
}: {
  op: string;
  f: FormField;
  values: Values;
  set: (name: string, v: Values[string]) => void;
}) {
  const fid = id(op, f);
  const hint = [
    f.description ? plainText(f.description) : "",
    f.min !== undefined && f.max !== undefined
      ? `${f.min} to ${f.max}`
      : f.min !== undefined
        ? `at least ${f.min}`
        : f.max !== undefined
          ? `at most ${f.max}`
          : "",
    f.maxItems ? `at most ${f.maxItems}` : "",
    f.default !== undefined ? `default ${JSON.stringify(f.default)}` : "",
  ]
    .filter(Boolean)
    .join(" · ");
  const hintId = `${fid}-hint`;
  const common = { id: fid, name: f.name, "aria-describedby": hint ? hintId : undefined };
  const v = values[f.name];
  let input: JSX.Element;
  switch (f.kind) {
    case "enum":
      input = (
        <select
          {...common}
          value={(v as string) ?? ""}
          onChange={(e) => set(f.name, (e.currentTarget as HTMLSelectElement).value)}
        >
          <option value="">(not set)</option>
          {f.options!.map((o) => (
            <option value={o}>{o}</option>
          ))}
        </select>
      );
      break;
    case "enums": {
      const chosen = (v as string[]) ?? [];
      const options = f.all ? ["all", ...f.options!] : f.options!;
      return (
        <fieldset>
          <legend>{label(f)}</legend>
          {options.map((o) => (
            <label class="inline">
              <input
                type="checkbox"
                name={f.name}
                value={o}
                checked={chosen.includes(o)}
                onChange={(e) =>
                  set(
                    f.name,
                    (e.currentTarget as HTMLInputElement).checked ? [...chosen, o] : chosen.filter((c) => c !== o),
                  )
                }
              />{" "}
              {o}
            </label>
          ))}
          {hint && (
            <p class="hint">
              <Prose text={hint} />
            </p>
          )}
        </fieldset>
      );
    }
    case "boolean":
      input = (
        <input
          {...common}
          type="checkbox"
          checked={v === true}
          onChange={(e) => set(f.name, (e.currentTarget as HTMLInputElement).checked)}
        />
      );
      break;
    case "integer":
      input = (
        <input
          {...common}
          type="number"
          step="1"
          min={f.min}
          max={f.max}
          value={(v as string) ?? ""}
          onInput={(e) => set(f.name, (e.currentTarget as HTMLInputElement).value)}
        />
      );
      break;
    case "list":
    case "json":
      input = (
        <textarea
          {...common}
          rows={3}
          value={(v as string) ?? ""}
          onInput={(e) => set(f.name, (e.currentTarget as HTMLTextAreaElement).value)}
        />
      );
      break;
    default:
      input = (
        <input
          {...common}
          type="text"
          value={(v as string) ?? ""}
          onInput={(e) => set(f.name, (e.currentTarget as HTMLInputElement).value)}
        />
      );
  }
  return (
    <div>
      <label for={fid}>{label(f)}</label>
      {input}
      {hint && (
        <p class="hint" id={hintId}>
          {f.kind === "list" ? "One a line. " : ""}
          <Prose text={hint} />
        </p>
      )}
    </div>
  );
}

function ProblemView({ p }: { p: Problem }) {
  return (
    <div role="alert" class="error" data-testid="problem">
      <strong>invalid_params{p.param ? ` (${p.param})` : ""}:</strong> <Prose text={p.message} />
      {p.note && (
        <p>
          <Prose text={p.note} />
        </p>
      )}
      {p.allowed && <p>Allowed: {p.allowed.join(", ")}</p>}
    </div>
  );
}

/**
 * A word on `platform` and `platforms` for the forms that have both (the contract takes exactly one of them): which
 * to fill in, and what each answers. Null for the other forms.
 */
export function platformChoice(fields: readonly FormField[]): string | null {
  const names = new Set(fields.map((f) => f.name));
  if (!names.has("platform") || !names.has("platforms")) return null;
  return (
    "Fill in one of platform and platforms, not both: platform searches one platform and can page on with a cursor; " +
    "platforms searches several at once (or all) and answers one result per platform, without a cursor."
  );
}

/** Which platforms read their official API and which the simulator (D114), as `GET /v1/capabilities` says. */
function Sources() {
  const [platforms, setPlatforms] = useState<{ platform: string; source: string }[] | null>(null);
  useEffect(() => {
    void call("GET", "/v1/capabilities").then((a) => {
      if (a.status === 200 && Array.isArray(a.body?.platforms)) setPlatforms(a.body.platforms);
    });
  }, []);
  if (!platforms) return null;
  const of = (source: string) => platforms.filter((p) => p.source === source).map((p) => p.platform);
  const parts = [
    of("live").length ? `${of("live").join(", ")} live (its official API)` : "none live",
    of("plugged").length ? `${of("plugged").join(", ")} plugged in (the operator's module)` : "",
    of("simulated").length ? `${of("simulated").join(", ")} simulated (invented data)` : "",
  ];
  return (
    <p class="hint" data-testid="sources">
      Platforms: {parts.filter(Boolean).join(" · ")}
    </p>
  );
}

export function Playground() {
  const [opId, setOpId] = useState(new URLSearchParams(location.search).get("op") ?? "searchPost");
  const form = useMemo(() => FORMS.find((f) => f.operationId === opId) ?? FORMS[0]!, [opId]);
  const [values, setValues] = useState<Values>({});
  const [problem, setProblem] = useState<Problem | null>(null);
  const [quote, setQuote] = useState<Answer["body"]>(null);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [progress, setProgress] = useState<{ done: number; planned: number; handle: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const run = useRef(0);
  const fields = form.fields.filter((f) => f.name !== "confirm");
  const set = (name: string, v: Values[string]) => setValues({ ...values, [name]: v });

  const reset = () => {
    run.current++;
    setProblem(null);
    setQuote(null);
    setAnswer(null);
    setProgress(null);
  };

  /** Builds the body, checks it with the contract's validator, sends it; follows a 202 to its end. */
  const send = async (confirm: boolean | undefined) => {
    reset();
    const built = bodyOf({ ...form, fields }, values);
    if ("problem" in built) return setProblem(built.problem);
    const body = confirm === false ? { ...built.body, confirm: false } : built.body;
    const check = (
      requestValidators as unknown as Record<string, { body: (v: unknown) => { ok: boolean; invalid?: Problem } }>
    )[form.operationId]!.body(body);
    if (!check.ok) return setProblem(check.invalid!);
    const mine = run.current;
    setBusy(true);
    try {
      let a = await call("POST", form.path, body);
      if (mine !== run.current) return;
      if (a.status === 200 && confirm === false) return setQuote(a.body);
      while (a.status === 202 && mine === run.current) {
        setProgress({ done: a.body.waves?.done ?? 0, planned: a.body.waves?.planned ?? 1, handle: a.body.handle });
        await new Promise((r) =>
          setTimeout(r, Math.min(2000, Math.max(200, (a.body.retry_after_seconds ?? 1) * 1000))),
        );
        a = await call("GET", `/v1/results/${encodeURIComponent(a.body.handle)}`);
      }
      if (mine !== run.current) return;
      if (a.status === 400 && a.body?.code === "invalid_params")
        setProblem({
          param: a.body.fix?.param,
          message: a.body.message,
          note: a.body.fix?.note,
          allowed: a.body.fix?.allowed,
        });
      setAnswer(a);
    } finally {
      setBusy(false);
    }
  };

  const handle: string | undefined = answer?.body?.handle ?? progress?.handle;
  const isFile = answer && typeof answer.body === "string";
  const fileUrl = useMemo(
    () =>
      isFile
        ? URL.createObjectURL(new Blob([answer!.body], { type: answer!.headers.get("content-type") ?? "text/plain" }))
        : null,
    [answer],
  );
  const fileExt = answer?.headers.get("content-type")?.includes("ndjson") ? "ndjson" : "csv";

  return (
    <div>
      <Sources />
      <label for="op">Operation</label>
      <select
        id="op"
        value={opId}
        onChange={(e) => {
          setOpId((e.currentTarget as HTMLSelectElement).value);
          setValues({});
          reset();
        }}
      >
        {FORMS.map((f) => (
          <option value={f.operationId}>
            {f.tool ? "Tool" : "Data"}: {f.path.replace("/v1/", "")} — {f.summary}
          </option>
        ))}
      </select>
      <form
        aria-label={`${form.path} parameters`}
        onSubmit={(e) => {
          e.preventDefault();
          void send(form.tool ? false : undefined);
        }}
      >
        {platformChoice(fields) && (
          <p class="hint" data-testid="platform-choice">
            {platformChoice(fields)}
          </p>
        )}
        {fields.map((f) => (
          <Field op={form.operationId} f={f} values={values} set={set} />
        ))}
        <button type="submit" disabled={busy}>
          {form.tool ? "Get the quote (free)" : "Run"}
        </button>
      </form>
      {problem && <ProblemView p={problem} />}
      {quote && (
        <section aria-label="Quote" data-testid="quote">
          <p>
            Quote: <strong>{quote.quote?.quote_credits} credits</strong> for {quote.quote?.calls_planned} calls.{" "}
            {quote.billing?.display}
          </p>
          <button type="button" disabled={busy} onClick={() => void send(true)}>
            Confirm and run
          </button>
        </section>
      )}
      {progress && !answer && (
        <p data-testid="progress" role="status">
          Running (handle <code>{progress.handle}</code>): waves {progress.done} of {progress.planned} done{" "}
          <progress value={progress.done} max={progress.planned} aria-label="Waves done" />
        </p>
      )}
      {answer && (
        <section data-testid="answer">
          <p role="status">
            HTTP {answer.status}
            {handle && (
              <>
                {" "}
                · handle <code data-testid="handle">{handle}</code>
              </>
            )}
            {answer.status >= 400 && (
              <span class="error">
                {" "}
                · <Prose text={errorText(answer)} />
              </span>
            )}
          </p>
          {form.operationId === "batchStats" && handle && (
            <p>
              <a href={`/v1/results/${encodeURIComponent(handle)}?format=csv`} download>
                Download CSV
              </a>{" "}
              ·{" "}
              <a href={`/v1/results/${encodeURIComponent(handle)}?format=ndjson`} download>
                Download NDJSON
              </a>
            </p>
          )}
          {isFile ? (
            <>
              <a href={fileUrl!} download={`batch_stats.${fileExt}`}>
                Download {fileExt.toUpperCase()}
              </a>
              <pre>{answer.body}</pre>
            </>
          ) : (
            <AnswerView answer={answer.body} />
          )}
        </section>
      )}
    </div>
  );
}
