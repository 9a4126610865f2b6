/**
 * The console's calls to its own server: same origin, the session cookie (HttpOnly, never read here) and the
 * session's CSRF token, kept in memory only (never in storage), sent as `X-CSRF-Token` on every call.
 */
let csrf: string | null = null;

export interface SessionInfo {
  user: { id: string; email: string; account_id: string };
  csrf_token: string;
  expires_at: string;
}

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: any route's JSON (or text); the pages read the fields they show
  body: any;
  headers: Headers;
}

/** Calls the server; the body is JSON (or text when not JSON). Never throws for an HTTP status. */
export async function call(
  method: string,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...extra };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // a file (csv, ndjson) or an empty body
  }
  // The 401 without a reason (D85): the session ended (idle, lifetime, signed out elsewhere): back to sign-in.
  if (
    res.status === 401 &&
    parsed &&
    typeof parsed === "object" &&
    !("reason" in parsed) &&
    path !== "/console/session"
  ) {
    csrf = null;
    dispatchEvent(new Event(SESSION_ENDED));
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The window event sent when a call finds the session ended. */
export const SESSION_ENDED = "sdgw:session-ended";

export async function currentSession(): Promise<SessionInfo | null> {
  const a = await call("GET", "/console/session");
  if (a.status !== 200) return null;
  csrf = a.body.csrf_token;
  return a.body as SessionInfo;
}

export async function signIn(
  email: string,
  password: string,
): Promise<{ ok: true; session: SessionInfo } | { ok: false; message: string }> {
  const a = await call("POST", "/console/session", { email, password });
  if (a.status === 200) {
    csrf = a.body.csrf_token;
    return { ok: true, session: a.body as SessionInfo };
  }
  return { ok: false, message: errorText(a) };
}

export async function signOut(): Promise<void> {
  await call("DELETE", "/console/session");
  csrf = null;
}

/** An error answer in one line: the message, then the fix's note. */
export function errorText(a: Answer): string {
  const b = a.body;
  if (b && typeof b === "object" && typeof b.message === "string") {
    const fix =
      b.fix && typeof b.fix === "object"
        ? [b.fix.param ? `(${b.fix.param})` : "", b.fix.note ?? ""].filter(Boolean).join(" ")
        : "";
    return `${b.code ?? a.status}: ${b.message}${fix ? ` — ${fix}` : ""}`;
  }
  return `HTTP ${a.status}`;
}
