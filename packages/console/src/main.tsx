/** The console's shell: the session, the pages (by path under /console/), the navigation. */
import { render } from "preact";
import { lazy, Suspense } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { SESSION_ENDED, currentSession, signOut, type SessionInfo } from "./api.ts";
import { SignIn } from "./pages/sign-in.tsx";
import "./style.css";

const Playground = lazy(() => import("./pages/playground.tsx").then((m) => m.Playground));
const Account = lazy(() => import("./pages/account.tsx").then((m) => m.Account));
const Keys = lazy(() => import("./pages/account.tsx").then((m) => m.Keys));
const Results = lazy(() => import("./pages/account.tsx").then((m) => m.Results));
const Schedules = lazy(() => import("./pages/account.tsx").then((m) => m.Schedules));

const PAGES = {
  playground: "Playground",
  results: "Results",
  account: "Account",
  keys: "Keys",
  schedules: "Schedules",
} as const;
type Page = keyof typeof PAGES | "sign-in";

const pageOf = (): Page => {
  const p = location.pathname.replace(/^\/console\/?/, "").replace(/\/$/, "");
  return p in PAGES || p === "sign-in" ? (p as Page) : "playground";
};

export function go(page: Page, search = ""): void {
  history.pushState(null, "", `/console/${page}${search}`);
  dispatchEvent(new PopStateEvent("popstate"));
}

function App() {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [page, setPage] = useState<Page>(pageOf());
  useEffect(() => {
    void currentSession().then(setSession);
    const onPop = () => setPage(pageOf());
    const onEnded = () => setSession(null);
    addEventListener("popstate", onPop);
    addEventListener(SESSION_ENDED, onEnded);
    return () => {
      removeEventListener("popstate", onPop);
      removeEventListener(SESSION_ENDED, onEnded);
    };
  }, []);
  useEffect(() => {
    document.title = `${page === "sign-in" || !session ? "Sign in" : PAGES[page]} · SDGW console`;
  }, [page, session]);
  if (session === undefined)
    return (
      <main>
        <p>Loading…</p>
      </main>
    );
  if (!session) {
    return (
      <SignIn
        onSignedIn={(s) => {
          setSession(s);
          if (page === "sign-in") go("playground");
        }}
      />
    );
  }
  const current = page === "sign-in" ? "playground" : page;
  return (
    <>
      <header>
        <strong>SDGW console</strong>
        <nav aria-label="Console">
          {Object.entries(PAGES).map(([p, label]) => (
            <a
              href={`/console/${p}`}
              aria-current={p === current ? "page" : undefined}
              onClick={(e) => {
                e.preventDefault();
                go(p as Page);
              }}
            >
              {label}
            </a>
          ))}
        </nav>
        <span class="who">{session.user.email}</span>
        <button
          type="button"
          onClick={() =>
            void signOut().then(() => {
              setSession(null);
              go("sign-in");
            })
          }
        >
          Sign out
        </button>
      </header>
      <main>
        <h1>{PAGES[current]}</h1>
        <Suspense fallback={<p>Loading…</p>}>
          {current === "playground" && <Playground />}
          {current === "results" && <Results />}
          {current === "account" && <Account />}
          {current === "keys" && <Keys />}
          {current === "schedules" && <Schedules />}
        </Suspense>
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
