/**
 * A worked example of an operator's own connector (D158): douyin read from a licensed source the operator pays — here
 * "Acme Social Data", a made-up aggregator with a small JSON API and a key — behind the gateway's contract.
 *
 * Load it with `SDGW_CONNECTORS=./examples/plugin-douyin/connector.ts SDGW_ACME_KEY=… SDGW_ACME_URL=https://…
 * pnpm start`: douyin is then `plugged` in the banner and `/v1/capabilities`. It imports only types from
 * `@sdgw/engine`: a plug-in needs nothing of the gateway at run time but what it is handed (`ctx.fetch`, the shared
 * budget, the clock, the log). `examples/plugin-douyin/plugin.test.ts` runs the connector acceptance suite on it
 * against a fake Acme on 127.0.0.1.
 */
import type { OperationSpec, PlatformProvider, ProviderOutcome, ProviderRequest } from "@sdgw/engine";
import type { ConnectorContext, ConnectorDefinition, ConnectorSetting, RawSettings } from "@sdgw/engine/connectors";

/** The checked settings. */
export interface AcmeSettings {
  key: string;
  baseUrl: string;
  dailyRequests: number;
}

/** Acme's JSON (only what is read). */
interface AcmeVideo {
  aweme_id: string;
  desc?: string;
  create_time?: number;
  author?: { sec_uid?: string; nickname?: string; follower_count?: number };
  statistics?: { digg_count?: number; comment_count?: number; share_count?: number; play_count?: number };
  video_url?: string;
}
interface AcmeUser {
  sec_uid: string;
  nickname?: string;
  signature?: string;
  follower_count?: number;
  following_count?: number;
  aweme_count?: number;
}
interface AcmeComment {
  cid: string;
  text?: string;
  create_time?: number;
  digg_count?: number;
  reply_comment_total?: number;
  user?: { sec_uid?: string; nickname?: string };
}

const SETTINGS: ConnectorSetting[] = [
  { name: "key", env: "SDGW_ACME_KEY", description: "Your Acme Social Data API key.", secret: true, switch: true },
  {
    name: "baseUrl",
    env: "SDGW_ACME_URL",
    description: "Acme's API address.",
    default: "https://api.acme-social.example/v1",
  },
  { name: "dailyRequests", env: "SDGW_ACME_DAILY_REQUESTS", description: "Requests a UTC day.", default: "5000" },
];

const OPS: OperationSpec[] = [
  ["search", "Search douyin videos · 搜索抖音视频"],
  ["trending", "Douyin hot list · 抖音热榜"],
  ["detail", "Details of douyin videos · 抖音视频详情"],
  ["comments", "Comments of a douyin video · 抖音评论"],
  ["user_profile", "A douyin account · 抖音账号"],
  ["user_posts", "Videos of a douyin account · 抖音账号作品"],
].map(([name, description]) => ({ name: name!, description: description!, price: 2, pricing: "standard" as const }));

const VIDEO_ID = /^\d{15,20}$/;
const SEC_UID = /^[A-Za-z0-9_-]{10,80}$/;
const NOTHING = "Nothing was charged.";

/** Checks raw settings; every problem names its setting as the operator wrote it, never the key's value. */
function configure(raw: RawSettings, label: (name: string) => string): AcmeSettings {
  const problems: string[] = [];
  for (const name of Object.keys(raw))
    if (!SETTINGS.some((s) => s.name === name)) problems.push(`${label(name)} is not a setting of this connector`);
  const key = raw["key"] ?? "";
  if (!/^[!-~]{8,256}$/.test(key))
    problems.push(`${label("key")} must be an Acme API key, 8 to 256 visible characters (the value is not shown)`);
  const baseUrl = (raw["baseUrl"] || SETTINGS[1]!.default!).replace(/\/+$/, "");
  let url: URL | null = null;
  try {
    url = new URL(baseUrl);
  } catch {
    url = null;
  }
  const loopback = url !== null && ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
  if (!url || !(url.protocol === "https:" || (url.protocol === "http:" && loopback)) || url.search || url.username)
    problems.push(`${label("baseUrl")} must be an https:// URL (http:// only to this machine), without query or user`);
  const daily = Number(raw["dailyRequests"] || SETTINGS[2]!.default);
  if (!Number.isSafeInteger(daily) || daily < 1)
    problems.push(`${label("dailyRequests")} must be a whole number from 1`);
  if (problems.length) {
    // The gateway's ConnectorConfigError is a plain Error with `problems`; a plug-in without run-time imports
    // throws its own with the same name and shape.
    const e = new Error(problems.join("; ")) as Error & { problems: string[] };
    e.name = "ConnectorConfigError";
    e.problems = problems;
    throw e;
  }
  return { key, baseUrl, dailyRequests: daily };
}

/** The cursor: Acme's page token bound to the operation and the other parameters (a cursor elsewhere is refused). */
function bind(op: string, params: Readonly<Record<string, unknown>>): string {
  const kept = Object.keys(params)
    .filter((k) => !["cursor", "count", "limit", "max_cost_credits", "op", "platform", "url"].includes(k))
    .sort()
    .map((k) => [k, params[k]]);
  let h = 0x811c9dc5;
  for (const ch of `${op}|${JSON.stringify(kept)}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16);
}
const encode = (op: string, params: Readonly<Record<string, unknown>>, token: string) =>
  Buffer.from(JSON.stringify({ v: 1, o: op, h: bind(op, params), t: token })).toString("base64url");
function decode(op: string, params: Readonly<Record<string, unknown>>, cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,2000}$/.test(cursor)) return null;
  try {
    const c = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Record<string, unknown>;
    return c["v"] === 1 && c["o"] === op && c["h"] === bind(op, params) && typeof c["t"] === "string" ? c["t"] : null;
  } catch {
    return null;
  }
}

const time = (s: unknown) =>
  typeof s === "number" && s > 0 ? new Date(Math.floor(s) * 1000).toISOString().replace(".000Z", "Z") : undefined;
const count = (n: unknown) => (typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : undefined);
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== "")) as T;

function video(v: AcmeVideo) {
  const a = v.author ?? {};
  const s = v.statistics ?? {};
  return defined({
    kind: "item" as const,
    id: v.aweme_id,
    url: `https://www.douyin.com/video/${v.aweme_id}`,
    text: v.desc,
    author: a.sec_uid
      ? defined({
          name: a.nickname || a.sec_uid,
          id: a.sec_uid,
          url: `https://www.douyin.com/user/${a.sec_uid}`,
          followers: count(a.follower_count),
        })
      : undefined,
    published_at: time(v.create_time),
    metrics: defined({
      likes: count(s.digg_count),
      comments: count(s.comment_count),
      shares: count(s.share_count),
      views: count(s.play_count),
    }),
    media: v.video_url?.startsWith("https://") ? [{ type: "video" as const, url: v.video_url }] : undefined,
  });
}

class AcmeDouyin {
  private readonly s: AcmeSettings;
  private readonly ctx: ConnectorContext;

  constructor(s: AcmeSettings, ctx: ConnectorContext) {
    this.s = s;
    this.ctx = ctx;
  }

  provider(): PlatformProvider {
    return {
      platform: "douyin",
      operations: OPS,
      scoped: false,
      source: "plugged",
      unsupported: (op, p) =>
        op === "search" && p["type"] === "user" ? "Acme finds videos only; read an account with user_profile." : null,
      cursorValid: (op, cursor, params) => decode(op, this.norm(params ?? {}), cursor) !== null,
      upstreamCost: (op) => (OPS.some((o) => o.name === op) ? 1 : 0),
      call: (req) => this.call(req),
      check: async (signal) => {
        const r = await this.get("/douyin/hot", {}, signal);
        return "body" in r
          ? { ok: true, message: "Acme Social Data accepted the key in SDGW_ACME_KEY" }
          : { ok: false, message: "Acme Social Data did not accept the key in SDGW_ACME_KEY" };
      },
    };
  }

  /** A link becomes the id it names, so that both share a cursor. */
  private norm(params: Readonly<Record<string, unknown>>): Record<string, unknown> {
    const out: Record<string, unknown> = { ...params };
    const url = typeof params["url"] === "string" ? params["url"] : undefined;
    if (url) {
      const m = /^https:\/\/(?:www\.)?douyin\.com\/(?:video|user)\/([A-Za-z0-9_-]+)\/?$/.exec(url);
      if (m) out["id"] = m[1];
    }
    delete out["url"];
    return out;
  }

  /** One GET of Acme, within the shared daily budget; the body, or the outcome that ends the call. */
  private async get(
    path: string,
    query: Record<string, string | number | undefined>,
    signal: AbortSignal,
  ): Promise<{ body: Record<string, unknown> } | { outcome: ProviderOutcome }> {
    const taken = await this.ctx.budget.take("douyin", [{ bucket: "requests", units: 1 }]);
    if (!taken.ok)
      return {
        outcome:
          taken.reason === "drained"
            ? {
                status: "error",
                failure: {
                  code: "rate_limited",
                  message: `The gateway's daily Acme budget is used up. ${NOTHING}`,
                  retryAfter: Math.max(1, Math.ceil((taken.resetsAt - this.ctx.now()) / 1000)),
                },
              }
            : {
                status: "error",
                failure: {
                  code: "temporarily_unavailable",
                  message: `The Acme budget cannot be checked now. ${NOTHING}`,
                },
              },
      };
    const url = new URL(`${this.s.baseUrl}${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    let res: Response;
    let text: string;
    try {
      res = await this.ctx.fetch(url.href, {
        headers: { "x-acme-key": this.s.key, accept: "application/json" },
        signal,
      });
      text = await res.text();
    } catch {
      if (signal.aborted) return { outcome: { status: "timeout", message: `Acme did not answer in time. ${NOTHING}` } };
      return {
        outcome: {
          status: "error",
          failure: { code: "upstream_error", message: `Acme could not be reached. ${NOTHING}`, retryable: true },
        },
      };
    }
    if (res.ok) {
      try {
        return { body: JSON.parse(text) as Record<string, unknown> };
      } catch {
        return {
          outcome: {
            status: "error",
            failure: {
              code: "upstream_error",
              message: `Acme answered something not JSON. ${NOTHING}`,
              retryable: true,
            },
          },
        };
      }
    }
    if (res.status === 404)
      return {
        outcome: {
          status: "error",
          failure: { code: "not_found", message: `This douyin object is missing, private or deleted. ${NOTHING}` },
        },
      };
    if (res.status === 401 || res.status === 403) {
      this.ctx.log.error(`douyin (Acme): the key in SDGW_ACME_KEY was refused (HTTP ${res.status})`);
      return {
        outcome: {
          status: "error",
          failure: {
            code: "upstream_error",
            message: `The douyin source refused the gateway's access (not your key). ${NOTHING}`,
            retryable: false,
          },
        },
      };
    }
    if (res.status === 429) {
      const wait = Number(res.headers.get("retry-after"));
      return {
        outcome: {
          status: "error",
          failure: {
            code: "rate_limited",
            message: `Acme is limiting the gateway. ${NOTHING}`,
            retryAfter: Number.isFinite(wait) && wait > 0 ? Math.ceil(wait) : 60,
          },
        },
      };
    }
    return {
      outcome: {
        status: "error",
        failure: {
          code: "upstream_error",
          message: `Acme answered HTTP ${res.status}. ${NOTHING}`,
          retryable: res.status >= 500,
        },
      },
    };
  }

  private async call(req: ProviderRequest): Promise<ProviderOutcome> {
    const op = req.operation;
    const p = this.norm(req.params);
    const invalid = (param: string, message: string): ProviderOutcome => ({
      status: "error",
      failure: { code: "invalid_target", param, message: `${message} ${NOTHING}` },
    });
    if (typeof req.params["url"] === "string" && p["id"] === undefined)
      return invalid("url", "This link names no douyin video or account (douyin.com/video/… or /user/… links do).");
    let token: string | undefined;
    if (typeof req.params["cursor"] === "string") {
      const t = decode(op, p, req.params["cursor"]);
      if (t === null) return invalid("cursor", "`cursor` is not a cursor of this douyin call; restart without it.");
      token = t;
    }
    const id = typeof p["id"] === "string" ? p["id"] : "";
    const size = Number(p["count"] ?? p["limit"] ?? 10);
    const list = async (
      path: string,
      query: Record<string, string | number | undefined>,
      map: (x: never) => object,
    ) => {
      const r = await this.get(path, { ...query, size, page_token: token }, req.signal);
      if ("outcome" in r) return r.outcome;
      const items = (Array.isArray(r.body["items"]) ? r.body["items"] : []).map((x) => map(x as never));
      const next = typeof r.body["next_page_token"] === "string" ? r.body["next_page_token"] : undefined;
      const page = next ? { has_more: true as const, cursor: encode(op, p, next) } : { has_more: false as const };
      return { status: items.length ? ("ok" as const) : ("empty" as const), items: items as never[], page };
    };
    switch (op) {
      case "search":
        return list("/douyin/search", { keyword: String(p["query"]) }, video);
      case "trending": {
        const r = await this.get("/douyin/hot", {}, req.signal);
        if ("outcome" in r) return r.outcome;
        const words = (Array.isArray(r.body["items"]) ? r.body["items"] : []) as {
          word?: string;
          hot_value?: number;
        }[];
        const items = words
          .filter((w) => typeof w.word === "string" && w.word !== "")
          .map((w, i) =>
            defined({
              kind: "leaderboard" as const,
              rank: i + 1,
              title: w.word!,
              query: w.word!,
              heat: count(w.hot_value),
              url: `https://www.douyin.com/search/${encodeURIComponent(w.word!)}`,
            }),
          );
        return { status: items.length ? "ok" : "empty", items: items as never[] };
      }
      case "detail": {
        if (!VIDEO_ID.test(id)) return invalid("id", "This is not a douyin video id (15 to 20 digits).");
        const r = await this.get(`/douyin/video/${id}`, {}, req.signal);
        return "outcome" in r ? r.outcome : { status: "ok", items: [video(r.body["video"] as AcmeVideo) as never] };
      }
      case "comments":
        if (!VIDEO_ID.test(id)) return invalid("id", "This is not a douyin video id (15 to 20 digits).");
        return list(`/douyin/video/${id}/comments`, {}, (c: AcmeComment) =>
          defined({
            kind: "item" as const,
            id: c.cid,
            parent_id: id,
            text: c.text,
            author: c.user?.sec_uid
              ? {
                  name: c.user.nickname || c.user.sec_uid,
                  id: c.user.sec_uid,
                  url: `https://www.douyin.com/user/${c.user.sec_uid}`,
                }
              : undefined,
            published_at: time(c.create_time),
            metrics: defined({ likes: count(c.digg_count) }),
            reply_count: count(c.reply_comment_total),
          }),
        );
      case "user_profile": {
        if (!SEC_UID.test(id)) return invalid("id", "This is not a douyin account (its sec_uid).");
        const r = await this.get(`/douyin/user/${id}`, {}, req.signal);
        if ("outcome" in r) return r.outcome;
        const u = r.body["user"] as AcmeUser;
        return {
          status: "ok",
          items: [
            defined({
              kind: "profile_card" as const,
              id: u.sec_uid,
              name: u.nickname || u.sec_uid,
              url: `https://www.douyin.com/user/${u.sec_uid}`,
              bio: u.signature,
              followers: count(u.follower_count),
              following: count(u.following_count),
              posts_count: count(u.aweme_count),
            }) as never,
          ],
        };
      }
      case "user_posts":
        if (!SEC_UID.test(id)) return invalid("id", "This is not a douyin account (its sec_uid).");
        return list(`/douyin/user/${id}/videos`, {}, video);
      default:
        return { status: "not_supported", message: `Acme does not offer douyin.${op}.` };
    }
  }
}

/** The plug-in: what `SDGW_CONNECTORS` loads. */
const connector: ConnectorDefinition<AcmeSettings> = {
  platform: "douyin",
  api: "Acme Social Data (licensed aggregator)",
  settings: SETTINGS,
  configure,
  budget: (s) => [{ name: "requests", limit: s.dailyRequests, timeZone: "UTC", label: "Acme requests" }],
  secrets: (s) => [s.key],
  describe: (s) => `Acme Social Data at ${s.baseUrl}`,
  create: (s, ctx) => new AcmeDouyin(s, ctx).provider(),
};

export default connector;
