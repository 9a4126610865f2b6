/** Answers rendered by item kind — content and profile cards, leaderboards, distributions, time series — and raw JSON. */
import type { ComponentChildren } from "preact";

/**
 * The contract's and the API's sentences as a person reads them: references to the design decisions (`D17`,
 * `(D24)`, `, D41`) left out, and `code` between backticks shown as code rather than with its backticks.
 */
export function plainText(text: string): string {
  return text
    .replace(/\s*\((?:D\d+(?:[–-]D?\d+)?)(?:[,;]\s*D\d+(?:[–-]D?\d+)?)*\)/g, "")
    .replace(/[,;]\s*D\d+(?:[–-]D?\d+)?(?=[),;.])/g, "")
    .replace(/\s{2,}/g, " ");
}

/** {@link plainText} rendered: the code between backticks as `<code>`. */
export function Prose({ text }: { text: string }) {
  const parts: ComponentChildren[] = plainText(text)
    .split(/`([^`]+)`/)
    .map((part, i) => (i % 2 ? <code>{part}</code> : part));
  return <>{parts}</>;
}
const KINDS = ["item", "profile_card", "leaderboard", "distribution", "timeseries"] as const;
type Kind = (typeof KINDS)[number];
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind, as the server wrote it; the cards read the fields they show
type AnyItem = Record<string, any> & { kind: Kind };

/** Every item of an answer, wherever it sits (items, fanout, targets). */
export function itemsOf(value: unknown, out: AnyItem[] = [], depth = 0): AnyItem[] {
  if (depth > 6 || value === null || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    for (const v of value) itemsOf(v, out, depth + 1);
    return out;
  }
  const o = value as Record<string, unknown>;
  if (typeof o["kind"] === "string" && (KINDS as readonly string[]).includes(o["kind"])) {
    out.push(o as AnyItem);
    return out;
  }
  for (const [k, v] of Object.entries(o)) if (k !== "applied_params" && k !== "billing") itemsOf(v, out, depth + 1);
  return out;
}

const n = (v: unknown) => (typeof v === "number" ? v.toLocaleString("en") : "");

function ContentCard({ it }: { it: AnyItem }) {
  return (
    <article class="card">
      <h3>{it["title"] ?? it["author"]?.name ?? it["id"]}</h3>
      {it["text"] && <p>{String(it["text"]).slice(0, 280)}</p>}
      <p class="muted">
        {it["author"]?.name && <>by {it["author"].name} · </>}
        {it["metrics"] &&
          Object.entries(it["metrics"])
            .map(([k, v]) => `${k} ${n(v)}`)
            .join(" · ")}
      </p>
      {it["url"] && (
        <a href={it["url"]} rel="noreferrer noopener" target="_blank">
          Open post {it["id"]}
        </a>
      )}
    </article>
  );
}

function ProfileCard({ it }: { it: AnyItem }) {
  return (
    <article class="card">
      <h3>
        {it["name"]}
        {it["verified"] ? " ✓" : ""}
      </h3>
      {it["bio"] && <p>{it["bio"]}</p>}
      <p class="muted">
        {n(it["followers"])} followers · {n(it["posts_count"])} posts
      </p>
    </article>
  );
}

function Leaderboard({ items }: { items: AnyItem[] }) {
  return (
    <table>
      <caption>Leaderboard</caption>
      <thead>
        <tr>
          <th scope="col">Rank</th>
          <th scope="col">Title</th>
          <th scope="col">Heat</th>
        </tr>
      </thead>
      <tbody>
        {items.map((it) => (
          <tr>
            <td>{it["rank"]}</td>
            <td>{it["title"]}</td>
            <td>{n(it["heat"])}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Distribution({ it }: { it: AnyItem }) {
  const max = Math.max(...it["buckets"].map((b: { value: number }) => b.value), 1e-9);
  return (
    <table class="bars">
      <caption>
        {it["dimension"]} ({it["unit"]})
      </caption>
      <tbody>
        {it["buckets"].map((b: { label: string; value: number }) => (
          <tr>
            <th scope="row">{b.label}</th>
            <td>
              <div class="bar" style={{ width: `${Math.max(1, (b.value / max) * 100)}%` }} />
            </td>
            <td>{it["unit"] === "ratio" ? `${(b.value * 100).toFixed(1)}%` : n(b.value)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The label of a point's time on an axis: a date, or a date and minute (UTC) for a date-time. */
const tick = (t: string) => (t.length > 10 ? t.slice(0, 16).replace("T", " ") : t);

/**
 * A line of points (t, value) as SVG with labelled axes (the lowest and highest value on the left, the first and last
 * time below), and a text summary for screen readers.
 */
export function Line({ points, label }: { points: Array<{ t: string; value: number }>; label: string }) {
  const w = 520;
  const h = 150;
  const [left, right, top, bottom] = [56, 8, 8, 22]; // room for the axis labels
  const values = points.map((p) => p.value);
  const max = Math.max(...values, 1e-9);
  const min = Math.min(...values, 0);
  const x = (i: number) =>
    left + (points.length < 2 ? (w - left - right) / 2 : (i / (points.length - 1)) * (w - left - right));
  const y = (v: number) => top + (1 - (v - min) / (max - min || 1)) * (h - top - bottom);
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ");
  const axis = { fill: "#444", "font-size": "11" };
  return (
    <figure>
      <svg
        width={w}
        height={h}
        role="img"
        aria-label={`${label}: ${points.length} points from ${points[0]?.t ?? ""} to ${points.at(-1)?.t ?? ""}, lowest ${n(min)}, highest ${n(max)}`}
      >
        <rect x={left} y={top} width={w - left - right} height={h - top - bottom} fill="#fafafa" stroke="#ccc" />
        <text {...axis} x={left - 4} y={top + 9} text-anchor="end" data-axis="max">
          {n(max)}
        </text>
        <text {...axis} x={left - 4} y={h - bottom} text-anchor="end" data-axis="min">
          {n(min)}
        </text>
        {points.length > 0 && (
          <text {...axis} x={left} y={h - 6} text-anchor="start" data-axis="first">
            {tick(points[0]!.t)}
          </text>
        )}
        {points.length > 1 && (
          <text {...axis} x={w - right} y={h - 6} text-anchor="end" data-axis="last">
            {tick(points.at(-1)!.t)}
          </text>
        )}
        <path d={d} fill="none" stroke="#2a6ebb" stroke-width="2" />
      </svg>
      <figcaption>{label}</figcaption>
    </figure>
  );
}

/**
 * What a call cost, from its answer's `billing`: a data answer's `cost` and `balance` (credits), a tool answer's
 * `cost_credits` and its `display`. Null when the answer carries no billing.
 */
export function costOf(answer: unknown): string | null {
  const billing = (answer as { billing?: Record<string, unknown> } | null)?.billing;
  if (!billing) return null;
  const credits = (n: number) => `${n.toLocaleString("en")} credit${n === 1 ? "" : "s"}`;
  if (typeof billing["cost_credits"] === "number") {
    const display = typeof billing["display"] === "string" ? ` · ${billing["display"]}` : "";
    return `Cost: ${credits(billing["cost_credits"])}${display}`;
  }
  if (typeof billing["cost"] === "number") {
    const balance = typeof billing["balance"] === "number" ? ` · ${credits(billing["balance"])} left` : "";
    return `Cost: ${credits(billing["cost"])}${balance}`;
  }
  return null;
}

export function AnswerView({ answer }: { answer: unknown }) {
  const items = itemsOf(answer);
  const of = (k: Kind) => items.filter((i) => i.kind === k);
  const cost = costOf(answer);
  return (
    <section aria-label="Answer">
      {cost && (
        <p class="muted" data-testid="cost">
          {cost}
        </p>
      )}
      {of("item").length > 0 && (
        <div class="cards" data-kind="item">
          {of("item").map((it) => (
            <ContentCard it={it} />
          ))}
        </div>
      )}
      {of("profile_card").length > 0 && (
        <div class="cards" data-kind="profile_card">
          {of("profile_card").map((it) => (
            <ProfileCard it={it} />
          ))}
        </div>
      )}
      {of("leaderboard").length > 0 && <Leaderboard items={of("leaderboard")} />}
      {of("distribution").map((it) => (
        <Distribution it={it} />
      ))}
      {of("timeseries").map((it) => (
        <Line points={it["points"]} label={`${it["metric"]}${it["unit"] ? ` (${it["unit"]})` : ""}`} />
      ))}
      <details>
        <summary>Raw JSON</summary>
        <pre>{JSON.stringify(answer, null, 2)}</pre>
      </details>
    </section>
  );
}
