/** Account pages: balance and today's spend, keys, the session's results, schedules. */
import { useEffect, useState } from "preact/hooks";
import { call, errorText, type Answer } from "../api.ts";
import { go } from "../main.tsx";
import { AnswerView, Line, Prose } from "../render.tsx";

function useLoad(path: string): [Answer | null, () => void] {
  const [a, setA] = useState<Answer | null>(null);
  const load = () => void call("GET", path).then(setA);
  useEffect(load, [path]);
  return [a, load];
}

const Failed = ({ a }: { a: Answer }) => (
  <p role="alert" class="error">
    <Prose text={errorText(a)} />
  </p>
);

export function Account() {
  const [a] = useLoad("/v1/account");
  const [spend] = useLoad("/console/api/spend");
  if (!a) return <p>Loading…</p>;
  if (a.status !== 200) return <Failed a={a} />;
  const b = a.body.billing;
  const limit = (v: number | null) => (v === null ? "no limit" : `${v.toLocaleString("en")} credits`);
  return (
    <div>
      <dl>
        <dt>Account</dt>
        <dd>
          {a.body.account.name} ({a.body.account.id}), plan {a.body.account.plan}, {a.body.account.status}
        </dd>
        <dt>Balance</dt>
        <dd data-testid="balance">{b.balance_credits.toLocaleString("en")} credits</dd>
        <dt>Spent today (UTC)</dt>
        <dd data-testid="today">
          {b.today_spend_credits.toLocaleString("en")} credits; daily limit: {limit(b.daily_limit_credits)}
          {b.daily_limit_credits !== null && (
            <>
              {" "}
              <progress
                value={b.today_spend_credits}
                max={b.daily_limit_credits}
                aria-label="Spent of the daily limit"
              />
            </>
          )}
        </dd>
        <dt>Schedules</dt>
        <dd>
          {a.body.workspace.schedules_count} of {a.body.workspace.schedules_limit}
        </dd>
      </dl>
      <p class="muted">{b.display}</p>
      <h2>Last 30 days</h2>
      {spend?.status === 200 && (
        <Line
          points={spend.body.days.map((d: { day: string; credits: number }) => ({ t: d.day, value: d.credits }))}
          label="Credits spent per UTC day"
        />
      )}
    </div>
  );
}

export function Keys() {
  const [a, reload] = useLoad("/console/api/keys");
  const [created, setCreated] = useState<{ secret: string; prefix: string } | null>(null);
  const [error, setError] = useState<Answer | null>(null);
  const [readData, setReadData] = useState(true);
  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const limit = String(f.get("daily_limit") ?? "");
    const r = await call("POST", "/console/api/keys", {
      name: String(f.get("name")),
      daily_limit: limit === "" ? null : Number(limit),
      read_data: f.get("read_data") === "on",
    });
    if (r.status !== 200) return setError(r);
    setError(null);
    setCreated({ secret: r.body.secret, prefix: r.body.key.prefix });
    form.reset();
    setReadData(true);
    reload();
  };
  const change = async (id: string, settings: { daily_limit?: number | null; read_data?: boolean }) => {
    const r = await call("POST", `/console/api/keys/${encodeURIComponent(id)}`, settings);
    setError(r.status === 200 ? null : r);
    reload();
  };
  const revoke = async (id: string) => {
    const r = await call("DELETE", `/console/api/keys/${encodeURIComponent(id)}`);
    if (r.status !== 200) setError(r);
    reload();
  };
  return (
    <div>
      <h2>New key</h2>
      <form onSubmit={create} aria-label="New key">
        <label>
          Name <input name="name" required maxLength={100} />
        </label>
        <label>
          Daily limit in credits (empty: none) <input name="daily_limit" type="number" min="0" step="1" />
        </label>
        <label class="inline">
          <input
            name="read_data"
            type="checkbox"
            checked={readData}
            onChange={(e) => setReadData((e.currentTarget as HTMLInputElement).checked)}
          />{" "}
          read_data (may call data routes and tools)
        </label>
        <br />
        <button type="submit">Create key</button>
      </form>
      {created && (
        <div role="status" data-testid="new-key">
          <p>Key {created.prefix}… created. Copy it now: it is shown once, and stored only as a hash.</p>
          <p class="secret">{created.secret}</p>
        </div>
      )}
      {error && <Failed a={error} />}
      <h2>Keys</h2>
      {a?.status === 200 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Prefix</th>
              <th scope="col">Status</th>
              <th scope="col">Permissions</th>
              <th scope="col">Daily limit</th>
              <th scope="col">Created</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {a.body.keys.map((k: Answer["body"]) => (
              <tr data-key={k.name}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{k.status}</td>
                <td>
                  {k.status === "revoked" ? (
                    k.permissions.join(", ") || "none"
                  ) : (
                    <label class="inline">
                      <input
                        type="checkbox"
                        checked={k.permissions.includes("read_data")}
                        onChange={(e) =>
                          void change(k.id, { read_data: (e.currentTarget as HTMLInputElement).checked })
                        }
                        aria-label={`read_data for ${k.name}`}
                      />{" "}
                      read_data
                    </label>
                  )}
                </td>
                <td>
                  {k.status === "revoked" ? (
                    (k.daily_limit ?? "none")
                  ) : (
                    <form
                      class="limit"
                      onSubmit={(e) => {
                        e.preventDefault();
                        const v = String(new FormData(e.currentTarget as HTMLFormElement).get("limit") ?? "");
                        void change(k.id, { daily_limit: v === "" ? null : Number(v) });
                      }}
                    >
                      <input
                        name="limit"
                        type="number"
                        min="0"
                        step="1"
                        value={k.daily_limit ?? ""}
                        aria-label={`Daily limit of ${k.name} in credits (empty: none)`}
                      />
                      <button type="submit" aria-label={`Save the daily limit of ${k.name}`}>
                        Save
                      </button>
                    </form>
                  )}
                </td>
                <td>{k.created_at}</td>
                <td>
                  {k.status !== "revoked" && (
                    <button type="button" onClick={() => void revoke(k.id)} aria-label={`Revoke ${k.name}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : a ? (
        <Failed a={a} />
      ) : (
        <p>Loading…</p>
      )}
    </div>
  );
}

export function Results() {
  const [a] = useLoad("/console/api/results");
  const [open, setOpen] = useState<Answer | null>(null);
  const read = async (handle: string) => setOpen(await call("GET", `/v1/results/${encodeURIComponent(handle)}`));
  if (!a) return <p>Loading…</p>;
  if (a.status !== 200) return <Failed a={a} />;
  return (
    <div>
      <p class="muted">
        Calls started in the Playground under this sign-in, newest first; a handle is read for 24 hours after its run
        ends.
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Operation</th>
            <th scope="col">State</th>
            <th scope="col">Charged</th>
            <th scope="col">Handle</th>
          </tr>
        </thead>
        <tbody>
          {a.body.results.map((r: Answer["body"]) => (
            <tr>
              <td>{r.started_at}</td>
              <td>
                {r.operation ?? "(not recorded)"}
                {!r.handle && <span class="muted"> · answered at once</span>}
              </td>
              <td>{r.state}</td>
              <td>{r.charged_credits}</td>
              <td>
                {r.handle ? (
                  <button type="button" onClick={() => void read(r.handle)}>
                    Read {r.handle}
                  </button>
                ) : (
                  "—"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {a.body.results.length === 0 && <p>No calls yet: run one in the Playground.</p>}
      {open && (open.status === 200 ? <AnswerView answer={open.body} /> : <Failed a={open} />)}
    </div>
  );
}

export function Schedules() {
  const [a, reload] = useLoad("/v1/schedules");
  const [error, setError] = useState<Answer | null>(null);
  const remove = async (id: string) => {
    const r = await call("DELETE", `/v1/schedules/${encodeURIComponent(id)}`);
    setError(r.status === 200 ? null : r);
    reload();
  };
  if (!a) return <p>Loading…</p>;
  if (a.status !== 200) return <Failed a={a} />;
  return (
    <div>
      <p>
        {a.body.schedules.length} of {a.body.limit} schedules.{" "}
        <a
          href="/console/playground?op=accountWatch"
          onClick={(e) => {
            e.preventDefault();
            go("playground", "?op=accountWatch");
          }}
        >
          Create one with account_watch
        </a>{" "}
        (set schedule.every).
      </p>
      {error && <Failed a={error} />}
      <table>
        <thead>
          <tr>
            <th scope="col">Schedule</th>
            <th scope="col">Every</th>
            <th scope="col">Next run</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          {a.body.schedules.map((s: Answer["body"]) => (
            <tr>
              <td>{s.schedule_id ?? s.id}</td>
              <td>{s.every}</td>
              <td>{s.next_run_at}</td>
              <td>
                <button type="button" onClick={() => void remove(s.schedule_id ?? s.id)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
