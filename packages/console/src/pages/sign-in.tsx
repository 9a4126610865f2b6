import { useState } from "preact/hooks";
import { signIn, type SessionInfo } from "../api.ts";

export function SignIn({ onSignedIn }: { onSignedIn: (s: SessionInfo) => void }) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setBusy(true);
    const r = await signIn(String(form.get("email")), String(form.get("password")));
    setBusy(false);
    if (r.ok) onSignedIn(r.session);
    else setError(r.message);
  };
  return (
    <main class="narrow">
      <h1>Sign in to the console</h1>
      <form onSubmit={submit}>
        <label>
          Email <input name="email" type="email" autocomplete="username" required />
        </label>
        <label>
          Password <input name="password" type="password" autocomplete="current-password" required />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
      <p class="muted">
        A fresh server prints the demo user's sign-in when it first starts; `pnpm admin create-user` makes more.
      </p>
    </main>
  );
}
