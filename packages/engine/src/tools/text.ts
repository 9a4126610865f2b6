/**
 * Text analysis of the tools: words (Chinese segmented by `Intl.Segmenter("zh", { granularity: "word" })`, whose
 * rules also split English and other space-separated text into words), keyword counts, and a small lexicon
 * sentiment (positive, neutral, negative) with word lists in Chinese and English written here. Pure and
 * deterministic.
 */
import type { DistributionItem } from "@sdgw/types";

const SEGMENTER = new Intl.Segmenter("zh", { granularity: "word" });

/** Function words left out of keyword counts (only words of 2 or more characters are counted at all). */
const STOPWORDS = new Set([
  // Chinese
  "我们",
  "你们",
  "他们",
  "她们",
  "它们",
  "大家",
  "自己",
  "这个",
  "那个",
  "这些",
  "那些",
  "这样",
  "那样",
  "这么",
  "那么",
  "什么",
  "怎么",
  "怎样",
  "如何",
  "为什么",
  "为何",
  "哪个",
  "哪里",
  "可以",
  "已经",
  "因为",
  "所以",
  "但是",
  "而且",
  "如果",
  "还是",
  "就是",
  "还有",
  "或者",
  "以及",
  "然后",
  "其实",
  "一个",
  "一下",
  "一些",
  "一点",
  "有点",
  "感觉",
  "真的",
  "到底",
  "不是",
  "没有",
  "时候",
  "今天",
  "现在",
  "之后",
  "之前",
  "出来",
  "起来",
  "哈哈",
  "哈哈哈",
  "哈哈哈哈",
  "嗯嗯",
  "啊啊",
  "的话",
  "这种",
  "那种",
  "每次",
  "还能",
  "只是",
  "觉得",
  "不会",
  "应该",
  "比较",
  "非常",
  "一样",
  "都是",
  "一份",
  "一次",
  "一直",
  "很多",
  "这里",
  "那里",
  "我的",
  "你的",
  "他的",
  "有没有",
  "是不是",
  // English
  "the",
  "and",
  "or",
  "but",
  "is",
  "are",
  "was",
  "were",
  "be",
  "been",
  "being",
  "to",
  "of",
  "in",
  "on",
  "for",
  "with",
  "at",
  "by",
  "from",
  "this",
  "that",
  "these",
  "those",
  "it",
  "its",
  "it's",
  "you",
  "he",
  "she",
  "we",
  "they",
  "my",
  "your",
  "our",
  "their",
  "me",
  "him",
  "her",
  "us",
  "them",
  "what",
  "which",
  "who",
  "whom",
  "how",
  "why",
  "when",
  "where",
  "there",
  "here",
  "so",
  "if",
  "as",
  "not",
  "no",
  "do",
  "does",
  "did",
  "done",
  "can",
  "could",
  "will",
  "would",
  "should",
  "just",
  "than",
  "then",
  "too",
  "very",
  "about",
  "into",
  "out",
  "up",
  "down",
  "all",
  "any",
  "some",
  "more",
  "most",
  "have",
  "has",
  "had",
  "i'm",
  "i've",
  "i'd",
  "i'll",
  "you're",
  "don't",
  "didn't",
  "doesn't",
  "isn't",
  "an",
  "am",
  "also",
  "only",
  "over",
  "after",
  "before",
  "again",
  "here's",
  "what's",
  "that's",
  "there's",
  "let's",
  "one",
  "get",
  "got",
]);

/** The word-like segments of a text, lower-cased (`’` read as `'`). */
export function words(text: string): string[] {
  const out: string[] = [];
  for (const s of SEGMENTER.segment(text.toLowerCase().replace(/\u2019/g, "'"))) {
    if (s.isWordLike) out.push(s.segment);
  }
  return out;
}

/** Whether a word counts as a keyword: 2 characters or more, not only digits, not a function word. */
export function isKeyword(word: string): boolean {
  return [...word].length >= 2 && !/^[\p{N}_'.-]+$/u.test(word) && !STOPWORDS.has(word);
}

/** The keywords of a text, in order, repeats kept. */
export function keywordsOf(text: string): string[] {
  return words(text).filter(isKeyword);
}

/** How often each keyword occurs across the texts (words in `exclude`, lower-cased, are left out). */
export function keywordCounts(texts: Iterable<string>, exclude: ReadonlySet<string> = new Set()): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const w of keywordsOf(text)) {
      if (exclude.has(w)) continue;
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  return counts;
}

/** Most frequent first; ties in code-point order of the word (deterministic). */
function byCount(a: readonly [string, number], b: readonly [string, number]): number {
  return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}

/**
 * The `top` most frequent keywords of the texts as a `distribution` with unit `count` (dimension `keyword`), or
 * null when the texts have none. `platform_extra` says how many texts and keywords were read.
 */
export function keywordDistribution(
  texts: readonly string[],
  options: { top?: number; exclude?: ReadonlySet<string> } = {},
): DistributionItem | null {
  const counts = keywordCounts(texts, options.exclude);
  if (counts.size === 0) return null;
  const ranked = [...counts].sort(byCount).slice(0, options.top ?? 20);
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return {
    kind: "distribution",
    dimension: "keyword",
    unit: "count",
    buckets: ranked.map(([label, value]) => ({ label, value })),
    platform_extra: {
      texts: texts.length,
      keywords: total,
      distinct_keywords: counts.size,
      segmenter: "Intl.Segmenter zh word",
    },
  };
}

// ------------------------------------------------------------------------------------------------ sentiment

/** Chinese words and phrases that say something good. */
const ZH_POSITIVE = [
  "有用",
  "收藏",
  "喜欢",
  "好用",
  "好看",
  "好吃",
  "好听",
  "推荐",
  "值得",
  "实用",
  "厉害",
  "优秀",
  "满意",
  "感谢",
  "谢谢",
  "辛苦",
  "学到",
  "太对",
  "说得对",
  "详细",
  "清晰",
  "爱了",
  "绝了",
  "良心",
  "靠谱",
  "划算",
  "可以接受",
  "三连",
  "支持",
  "干货",
  "舒服",
  "惊喜",
  "漂亮",
  "方便",
  "开心",
  "完美",
  "牛",
  "棒",
  "赞",
  "好评",
  "高级",
  "治愈",
  "涨知识",
  "有帮助",
  "期待",
  "优质",
  "精彩",
  "佩服",
  "神器",
  "宝藏",
  "不错",
];
/** Chinese words and phrases that say something bad. */
const ZH_NEGATIVE = [
  "踩坑",
  "踩雷",
  "夸张",
  "失望",
  "难用",
  "难吃",
  "难看",
  "垃圾",
  "后悔",
  "差评",
  "太贵",
  "不值",
  "骗人",
  "翻车",
  "智商税",
  "无语",
  "恶心",
  "退货",
  "卡顿",
  "吐槽",
  "避雷",
  "割韭菜",
  "糟糕",
  "生气",
  "坑人",
  "离谱",
  "敷衍",
  "劝退",
  "质量差",
  "差劲",
  "虚假",
  "烂",
  "不好",
  "不行",
];
/** English words that say something good. */
const EN_POSITIVE = [
  "great",
  "good",
  "love",
  "loved",
  "thanks",
  "thank",
  "useful",
  "helpful",
  "amazing",
  "awesome",
  "excellent",
  "best",
  "underrated",
  "nice",
  "needed",
  "perfect",
  "well",
  "agree",
  "recommend",
  "clear",
  "brilliant",
  "impressed",
  "impressive",
  "cool",
  "favorite",
  "fantastic",
  "wow",
  "exactly",
  "beautiful",
  "solid",
  "worth",
  "enjoyed",
  "happy",
  "glad",
  "wonderful",
];
/** English words that say something bad. */
const EN_NEGATIVE = [
  "bad",
  "disagree",
  "worst",
  "hate",
  "terrible",
  "awful",
  "overrated",
  "useless",
  "wrong",
  "broken",
  "disappointed",
  "disappointing",
  "scam",
  "boring",
  "poor",
  "waste",
  "annoying",
  "confusing",
  "expensive",
  "slow",
  "buggy",
  "fail",
  "failed",
  "sucks",
  "misleading",
  "clickbait",
  "meh",
  "ugly",
  "horrible",
  "problem",
];
const ZH_NEGATORS = ["没有", "不", "没", "别", "未"];
const EN_NEGATORS = new Set([
  "not",
  "no",
  "never",
  "don't",
  "doesn't",
  "didn't",
  "isn't",
  "wasn't",
  "aren't",
  "can't",
  "won't",
  "nothing",
  "hardly",
  "barely",
]);

const ZH_LEXICON: ReadonlyArray<readonly [string, 1 | -1]> = [
  ...ZH_POSITIVE.map((w) => [w, 1] as const),
  ...ZH_NEGATIVE.map((w) => [w, -1] as const),
].sort((a, b) => b[0].length - a[0].length);
const EN_LEXICON = new Map<string, 1 | -1>([
  ...EN_POSITIVE.map((w) => [w, 1] as const),
  ...EN_NEGATIVE.map((w) => [w, -1] as const),
]);

/**
 * The lexicon score of a text: +1 for each positive entry, -1 for each negative one, flipped after a negator
 * (`不`, `没`, `没有`, `别`, `未` right before a Chinese entry; `not`, `never`, `don't`, … within the two words
 * before an English one). Chinese entries are matched longest first, left to right, without overlaps.
 */
export function sentimentScore(text: string): number {
  let score = 0;
  // Chinese: longest match at each position.
  for (let i = 0; i < text.length; ) {
    const hit = ZH_LEXICON.find(([w]) => text.startsWith(w, i));
    if (!hit) {
      i++;
      continue;
    }
    const negated = ZH_NEGATORS.some((n) => text.endsWith(n, i));
    score += negated ? -hit[1] : hit[1];
    i += hit[0].length;
  }
  // English: words, with negators up to two words back.
  const ws = words(text);
  for (let i = 0; i < ws.length; i++) {
    const polarity = EN_LEXICON.get(ws[i]!);
    if (!polarity) continue;
    const negated = EN_NEGATORS.has(ws[i - 1] ?? "") || EN_NEGATORS.has(ws[i - 2] ?? "");
    score += negated ? -polarity : polarity;
  }
  return score;
}

/** The sentiment of one text. */
export type Sentiment = "positive" | "neutral" | "negative";

/** `positive` when the score is above 0, `negative` below, else `neutral`. */
export function sentimentOf(text: string): Sentiment {
  const s = sentimentScore(text);
  return s > 0 ? "positive" : s < 0 ? "negative" : "neutral";
}

/**
 * The shares of positive, neutral and negative texts as a `distribution` with unit `ratio` (dimension
 * `sentiment`, the three buckets always, in that order, summing to 1), or null for no texts.
 */
export function sentimentDistribution(texts: readonly string[], basis: string): DistributionItem | null {
  if (texts.length === 0) return null;
  const counts = { positive: 0, neutral: 0, negative: 0 };
  for (const t of texts) counts[sentimentOf(t)]++;
  return {
    kind: "distribution",
    dimension: "sentiment",
    unit: "ratio",
    buckets: ratioBuckets([
      ["positive", counts.positive],
      ["neutral", counts.neutral],
      ["negative", counts.negative],
    ])!,
    platform_extra: { basis, texts: texts.length, counts, method: "lexicon" },
  };
}

/**
 * Shares of counts (`count / total`), in the order given, or null when the total is 0. The shares sum to 1 up to
 * floating-point rounding (well within 1e-9).
 */
export function ratioBuckets(
  counts: ReadonlyArray<readonly [string, number]>,
): Array<{ label: string; value: number }> | null {
  const total = counts.reduce((a, [, n]) => a + n, 0);
  if (!(total > 0)) return null;
  return counts.map(([label, n]) => ({ label, value: n / total }));
}
