/**
 * The two workloads of the validator benchmark:
 * 1. the fixture corpus: every JSON fixture of fixtures/index.json with the named component schema its body is;
 * 2. a large answer: a `SearchEnvelope` (status ok) of 20 `item`s, each carrying every optional field.
 * Plus the broken copies of the large answer every contender must refuse.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { responseSchema, SCHEMA_ID, type OpenApiDoc } from "../../generators/src/spec.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The named component schemas a JSON answer can be. `ScheduleDeleted` (the one answer of deleteSchedule) is not
 * among the package's named validators; ours checks it through `responseValidators.deleteSchedule(200, …)`, which
 * runs the same compiled function (a bare `$ref` is exported as its target).
 */
export const ANSWER_SCHEMAS = [
  "SearchEnvelope",
  "FanoutAnswer",
  "DataEnvelope",
  "TargetsAnswer",
  "HandleAnswer",
  "ToolAnswer",
  "ToolQuoteAnswer",
  "ErrorStructure",
  "AccountAnswer",
  "ScheduleList",
  "CapabilitiesAnswer",
  "FindAnswer",
  "ScheduleDeleted",
] as const;
export type AnswerSchema = (typeof ANSWER_SCHEMAS)[number];

export interface Fixture {
  file: string;
  operationId: string;
  http: number;
  schema: AnswerSchema;
  body: unknown;
}

interface IndexRow {
  file: string;
  operationId: string;
  http: number;
  mediaType: string;
}

type Schema = Record<string, unknown>;

const refName = (ref: string) => ref.replace(SCHEMA_ID, "").replace(/^#\/(\$defs|components\/schemas)\//, "");

/** The names a schema is a union of: `$ref`s, and `oneOf`/`anyOf` of `$ref`s followed down (itself otherwise). */
function unionMembers(doc: OpenApiDoc, name: string): string[] {
  const def = doc.components.schemas[name] as Schema;
  const list = (def["oneOf"] ?? def["anyOf"]) as Schema[] | undefined;
  if (!list?.every((b) => typeof b["$ref"] === "string")) return [name];
  return list.flatMap((b) => [refName(b["$ref"] as string), ...unionMembers(doc, refName(b["$ref"] as string))]);
}

/**
 * The answer schemas an operation's documented answer can be. Its response schema names schemas (directly or in a
 * `oneOf`/`anyOf`); each name is an answer schema, or a member of one (`ErrorInvalidParams` of `ErrorStructure`),
 * or a union whose members are followed down.
 */
function candidates(doc: OpenApiDoc, node: unknown): AnswerSchema[] {
  if (!node || typeof node !== "object") return [];
  const s = node as Schema;
  const ref = s["$ref"];
  if (typeof ref === "string") {
    const name = refName(ref);
    if ((ANSWER_SCHEMAS as readonly string[]).includes(name)) return [name as AnswerSchema];
    const owners = ANSWER_SCHEMAS.filter((a) => doc.components.schemas[a] && unionMembers(doc, a).includes(name));
    if (owners.length) return owners;
    return candidates(doc, doc.components.schemas[name]);
  }
  const list = (s["oneOf"] ?? s["anyOf"]) as unknown[] | undefined;
  return list ? [...new Set(list.flatMap((b) => candidates(doc, b)))] : [];
}

/**
 * Loads every JSON fixture and maps it, by its operation and HTTP status, to the one answer schema it is:
 * among the schemas the operation documents for that status, the one our validators accept.
 * `accepts(schema, body)` is ours; the mapping fails loudly when zero or several schemas fit.
 */
export function loadCorpus(doc: OpenApiDoc, accepts: (schema: AnswerSchema, body: unknown) => boolean): Fixture[] {
  const index = JSON.parse(readFileSync(`${ROOT}fixtures/index.json`, "utf8")) as IndexRow[];
  const out: Fixture[] = [];
  for (const row of index) {
    if (row.mediaType !== "application/json") continue;
    const body: unknown = JSON.parse(readFileSync(`${ROOT}fixtures/${row.file}`, "utf8"));
    const fits = candidates(doc, responseSchema(doc, row.operationId, row.http)).filter((name) => accepts(name, body));
    if (fits.length !== 1)
      throw new Error(`fixture ${row.file}: ${fits.length} answer schemas fit (${fits.join(", ")})`);
    out.push({ file: row.file, operationId: row.operationId, http: row.http, schema: fits[0]!, body });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- the large answer

const TITLES = [
  "周末去杭州西湖边的小众咖啡店，真的太出片了☕️",
  "油皮亲妈！夏天控油底妆全流程分享",
  "上海三天两夜citywalk路线，本地人都说好",
  "打工人15分钟快手早餐，一周不重样",
  "第一次带爸妈去云南，大理洱海骑行攻略",
  "租房党必看｜500块改造出租屋，幸福感翻倍",
  "考研上岸经验贴：英语一从52到78分的方法",
  "成都美食探店合集｜这家火锅排队两小时也值",
  "新手养猫避坑指南，这些东西千万别买",
  "春季通勤穿搭｜小个子女生一衣多穿",
];

const TEXTS = [
  "藏在满觉陇路尽头的一家咖啡店，老板是景德镇回来的陶艺师，杯子都是自己烧的。推荐桂花拿铁，甜度刚好，秋天坐在院子里能闻到整条街的桂花香。工作日下午人很少，适合带本书坐一下午。人均45元左右，停车不太方便，建议坐公交到茶叶博物馆站步行过去。",
  "混油皮，T区一到下午就泛油光。试了十几款粉底液，最后留下这套：妆前用控油隔离薄涂在T区，粉底液选哑光质地，用湿的美妆蛋一点点拍开，最后用散粉把鼻翼和额头重点定妆。实测室外通勤一整天不斑驳，午休时用吸油纸按压一下就好。附上每一步的用量和手法，大家可以参考。",
  "第一天从武康路出发，沿着安福路、巨鹿路一路逛到静安寺，老洋房和梧桐树真的很有味道；第二天去外滩看万国建筑群，晚上坐轮渡到陆家嘴看夜景，两块钱的船票性价比超高；第三天留给豫园和城隍庙，记得早点去避开人流。全程地铁加步行，每天大概两万步，鞋一定要穿舒服的。",
  "前一晚把燕麦、牛奶和奇亚籽泡进玻璃罐放冰箱，早上加一把蓝莓和坚果就能吃。周二做鸡蛋饼，面粉加鸡蛋加葱花，平底锅两分钟搞定。周三是全麦三明治，夹生菜、番茄和鸡胸肉。每样都控制在15分钟以内，营养也够，上班再也不用在路边随便买包子了。",
  "从昆明坐高铁两个小时到大理，住在才村附近的民宿，推开窗就是洱海。租了电动车沿着生态廊道骑行，爸妈一路都在拍照。推荐早上七点出发看日出，光线特别柔和；下午去喜洲古镇吃破酥粑粑，晚上回古城逛逛。注意紫外线很强，防晒霜和帽子一定要带。",
  "房东留下的家具又旧又丑，没法大动就做软装：换了米白色的窗帘和床品，墙上贴了免钉挂钩挂装饰画，书桌铺上桌布再加一盏暖光台灯。地上铺了一块可水洗的地毯，角落放了两盆龟背竹。总共花了487元，退租的时候全部都能带走，现在每天下班都很想回家。",
  "基础差的同学先别急着刷真题，前两个月把单词过三遍，每天早上背新词、晚上复习旧词。阅读按照题型分类练，每篇做完逐句精读，把长难句拆开分析。作文从九月开始背模板，但一定要改成自己的话。真题至少做两遍，第二遍重点看错题背后的出题逻辑。",
  "这家店在玉林路的小巷子里，没有招牌，全靠本地人口口相传。牛油锅底香而不燥，鲜毛肚七上八下刚刚好，鸭血嫩到入口即化。一定要点他们家的冰粉和红糖糍粑，解辣神器。下午五点开门，四点半就开始排队，建议提前在小程序上取号。",
  "刚接猫回家的时候踩了不少坑：自动喂食器猫根本不用，封闭式猫砂盆它不愿意进，花里胡哨的猫爬架最后成了晾衣架。真正有用的是：一个大号开放猫砂盆、陶瓷碗、一根逗猫棒和定期驱虫。猫粮看配料表，第一位要是肉，别被营销话术带跑偏。",
  "身高155，通勤要求舒服又不失精致。一件基础款白衬衫可以搭高腰直筒西裤，也能塞进半身裙；针织开衫当外套或者披在肩上都好看。鞋子选低跟乐福鞋，显高又不累脚。颜色控制在三种以内，整体会显得干净利落，早上出门不用纠结十分钟。",
];

const NAMES = [
  "桂花拿铁不加糖",
  "小鹿爱化妆",
  "上海漫步指南",
  "早餐研究所",
  "带着爸妈去旅行",
  "出租屋改造日记",
  "考研英语阿杰",
  "成都吃货小分队",
  "橘猫胖胖的铲屎官",
  "155穿搭日记",
];

/** A `SearchEnvelope` with status `ok` and 20 `item`s, each with every optional field. */
export function largeAnswer(): Record<string, unknown> {
  const items = Array.from({ length: 20 }, (_, i) => {
    const n = i % 10;
    const id = `6${(4_000_000_000 + i * 7_919_113).toString(16)}0000000${i.toString(16).padStart(2, "0")}`;
    return {
      kind: "item",
      id,
      url: `https://www.xiaohongshu.com/explore/${id}?xsec_token=AB${i}xK9pQ&xsec_source=pc_search`,
      author: {
        name: NAMES[n]!,
        id: `5f${(123_456_789 + i * 31).toString(16)}0000000001a${i}`,
        url: `https://www.xiaohongshu.com/user/profile/5f${(123_456_789 + i * 31).toString(16)}0000000001a${i}`,
        followers: 12_345 + i * 1_021,
      },
      published_at: `2026-11-${String(1 + (i % 20)).padStart(2, "0")}T${String(8 + (i % 12)).padStart(2, "0")}:${String((i * 7) % 60).padStart(2, "0")}:00+08:00`,
      metrics: {
        likes: 2_300 + i * 137,
        collects: 1_800 + i * 91,
        comments: 240 + i * 13,
        shares: 88 + i * 5,
        views: 150_000 + i * 9_973,
      },
      media: [
        { type: "image", url: `https://sns-webpic-qc.xhscdn.com/202611/1040g2sg31${i}a1/spectrum/1000g0k0${i}.jpg` },
        { type: "image", url: `https://sns-webpic-qc.xhscdn.com/202611/1040g2sg31${i}a2/spectrum/1000g0k0${i}b.jpg` },
        { type: "video", url: `https://sns-video-bd.xhscdn.com/stream/110/258/01e6${i}f3a.mp4`, duration_s: 37.5 + i },
      ],
      parent_id: `6${(3_900_000_000 + i).toString(16)}00000000root`,
      reply_count: 12 + i,
      platform_extra: {
        note_type: i % 3 === 0 ? "video" : "normal",
        ip_location: ["浙江", "上海", "四川", "云南", "北京"][i % 5],
        tag_list: ["探店", "周末去哪儿", "生活记录"],
        liked: false,
        cover: { width: 1080, height: 1440 },
      },
      title: TITLES[n]!,
      text: `${TEXTS[n]!} #${TITLES[(n + 3) % 10]!.slice(0, 6)}`,
    };
  });
  return {
    request_id: "req_01JD3YF6W0AC8QK2",
    schema_version: "v1",
    fetched_at: "2026-11-21T08:30:00Z",
    status: "ok",
    applied_params: {
      platform: "xiaohongshu",
      query: "周末去哪儿 咖啡",
      type: "content",
      count: 20,
      sort: "most_liked",
      time_range: "7d",
    },
    warnings: ["xiaohongshu returned 20 of 20 requested items"],
    items,
    page: { has_more: true, cursor: "eyJwYWdlIjoyLCJzZWFyY2hfaWQiOiIyZjk4YTFiMiJ9" },
    platform: "xiaohongshu",
    billing: { cost: 1, balance: 4_998, unit: "credits", pricing: "standard" },
  };
}

type Mutable = Record<string, unknown>;

/** Copies of the large answer that every contender must refuse, each with one fault in its last item. */
export function brokenCopies(large: Record<string, unknown>): Array<{ name: string; value: unknown }> {
  const copy = () => structuredClone(large) as { items: Mutable[] };
  const lastItem = (v: { items: Mutable[] }) => v.items[v.items.length - 1]!;
  const tooMany = copy();
  (lastItem(tooMany)["metrics"] as Mutable)["likes"] = 2 ** 53;
  const badDate = copy();
  lastItem(badDate)["published_at"] = "2025-02-30T10:00:00+08:00";
  return [
    { name: "likes = 2^53", value: tooMany },
    { name: "published_at 2025-02-30", value: badDate },
  ];
}

/**
 * Deterministic small changes of every fixture (its first key dropped, an unknown key added at the top and in the
 * last object, the last string emptied, the last number made -1), to compare each contender's verdicts with ours:
 * a translation that accepts too much, or too little, shows up as disagreements.
 */
export function mutations(corpus: Fixture[]): Array<{ schema: AnswerSchema; value: unknown; what: string }> {
  type Path = Array<string | number>;
  const out: Array<{ schema: AnswerSchema; value: unknown; what: string }> = [];
  for (const f of corpus) {
    const objects: Path[] = [];
    const strings: Path[] = [];
    const numbers: Path[] = [];
    const walk = (node: unknown, path: Path) => {
      if (typeof node === "string") strings.push(path);
      else if (typeof node === "number") numbers.push(path);
      else if (Array.isArray(node)) for (const [i, v] of node.entries()) walk(v, [...path, i]);
      else if (node && typeof node === "object") {
        objects.push(path);
        for (const [k, v] of Object.entries(node)) walk(v, [...path, k]);
      }
    };
    walk(f.body, []);
    const at = (root: unknown, path: Path) =>
      path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], root);
    const variant = (
      what: string,
      path: Path,
      change: (holder: Record<string | number, unknown>, key: string | number) => void,
    ) => {
      const v = structuredClone(f.body);
      change(at(v, path.slice(0, -1)) as Record<string | number, unknown>, path[path.length - 1]!);
      out.push({ schema: f.schema, value: v, what: `${f.file}: ${what} at /${path.join("/")}` });
    };
    const firstKey = Object.keys(f.body as object)[0];
    if (firstKey) variant("key dropped", [firstKey], (h, k) => delete h[k]);
    variant("unknown key", ["zz_unknown"], (h, k) => (h[k] = 1));
    const last = objects[objects.length - 1];
    if (last?.length) variant("unknown key", [...last, "zz_unknown"], (h, k) => (h[k] = 1));
    const str = strings[strings.length - 1];
    if (str) variant("string emptied", str, (h, k) => (h[k] = ""));
    const num = numbers[numbers.length - 1];
    if (num) variant("number made -1", num, (h, k) => (h[k] = -1));
  }
  return out;
}
