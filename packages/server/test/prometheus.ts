/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests of `GET /metrics`: every line is a
 * `# HELP`, a `# TYPE` or a sample of a family whose type was declared before it, with well-formed names, label
 * pairs and values; anything else throws, naming the line.
 */

/** One sample: its metric name, its labels and its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
// Values as Prometheus reads them (Go's ParseFloat): decimals, and Inf and NaN in any case (prom-client writes `Nan`).
const VALUE = "[+-]?(?:\\d+(?:\\.\\d*)?(?:[eE][+-]?\\d+)?|\\.\\d+(?:[eE][+-]?\\d+)?|[Ii][Nn][Ff]|[Nn][Aa][Nn])";
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (${VALUE})(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP (${NAME}) .*$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SUFFIXES: Record<string, string[]> = {
  counter: [""],
  gauge: [""],
  untyped: [""],
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["", "_sum", "_count"],
};

/** Parses an exposition; throws on the first line that is not valid. */
export function parsePrometheus(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === "") continue;
    if (line.startsWith("# HELP ")) {
      if (!HELP.test(line)) throw new Error(`bad HELP, ${where}`);
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const m = TYPE.exec(line);
      if (!m) throw new Error(`bad TYPE, ${where}`);
      if (types.has(m[1]!)) throw new Error(`TYPE declared twice, ${where}`);
      types.set(m[1]!, m[2]!);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad sample, ${where}`);
    const name = m[1]!;
    const family = [...types.entries()].find(([f, t]) => SUFFIXES[t]!.some((s) => `${f}${s}` === name));
    if (!family) throw new Error(`sample of an undeclared family, ${where}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1");
    const raw = m[3]!;
    const value = /inf$/i.test(raw)
      ? raw.startsWith("-")
        ? -Infinity
        : Infinity
      : /nan$/i.test(raw)
        ? NaN
        : Number(raw);
    samples.push({ name, labels, value });
  }
  return samples;
}

/** The value of the sample `name` with exactly these labels (among others it may have), or undefined. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
