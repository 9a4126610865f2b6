/**
 * Runs the waves of a tool against the provider port: each wave is one step of the quote (D6); its calls go out
 * a few at a time, each with its own time limit; a failed call becomes a warning; the steps are reported after
 * each wave. A wave never makes more calls than its step planned (the quote is an upper bound of the price).
 * At the end, the run's status follows the envelope's rules: every call failed → `error` (or the common
 * `timeout` / `not_supported`), nothing found → `empty`, else `ok`.
 */
import type { EnvelopeError, Item, Page, Platform, Step } from "@sdgw/types";
import { DEFAULT_URLS, type ServiceUrls } from "@sdgw/validators";
import { capabilitiesUrl, envelopeError } from "../answers.ts";
import type { ProviderOutcome } from "../providers/port.ts";
import type { OnStep, RunResult, ToolContext } from "./types.ts";

/** What one provider call gave the tool. */
export type CallOutcome =
  | { ok: true; status: "ok" | "empty"; items: Item[]; page?: Page }
  | { ok: false; status: "error" | "not_supported" | "timeout"; error: EnvelopeError };

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_CONCURRENCY = 4;

class CallTimeout extends Error {
  constructor() {
    super("the provider call passed its time");
  }
}

/** The executor of one run's waves. */
export class Runner {
  /** The steps, updated as the run goes. */
  readonly steps: Step[];
  private readonly warnings: string[];
  private readonly urls: ServiceUrls;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private current: Step | null = null;
  private made = 0;
  private succeeded = 0;
  private readonly failures: Array<{ status: "error" | "not_supported" | "timeout"; error: EnvelopeError }> = [];
  private readonly ctx: ToolContext;
  private readonly onStep: OnStep;

  /** A runner of the steps of `plan` (a quote's `plan`), starting with the request-wide `warnings`. */
  constructor(ctx: ToolContext, plan: readonly Step[], warnings: readonly string[], onStep: OnStep = () => undefined) {
    this.ctx = ctx;
    this.onStep = onStep;
    this.steps = plan.map((s) => ({ ...s, status: "pending", calls_done: 0 }));
    this.warnings = [...warnings];
    this.urls = ctx.urls ?? DEFAULT_URLS;
    this.timeoutMs = ctx.callTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.concurrency = Math.max(1, ctx.concurrency ?? DEFAULT_CONCURRENCY);
  }

  /** Adds a warning to the answer. */
  warn(message: string): void {
    if (!this.warnings.includes(message)) this.warnings.push(message);
  }

  /** Whether the plan has a step of this name (waves with no calls are left out of a plan). */
  has(name: string): boolean {
    return this.steps.some((s) => s.name === name);
  }

  /**
   * Runs the wave `name`: `fn` makes its calls through `call`. The step is `failed` when it made calls and every
   * one failed, else `done`; `onStep` gets the steps afterwards. A plan without that step runs nothing.
   */
  async wave<T>(name: string, fn: () => Promise<T>, fallback: T): Promise<T> {
    const step = this.steps.find((s) => s.name === name && s.status === "pending");
    if (!step) return fallback;
    step.status = "running";
    this.current = step;
    const made = this.made;
    const succeeded = this.succeeded;
    try {
      return await fn();
    } finally {
      this.current = null;
      step.status = this.made > made && this.succeeded === succeeded ? "failed" : "done";
      this.report();
    }
  }

  /** Whether the wave `name` still has calls left to make. */
  callsLeft(name: string): number {
    const step = this.steps.find((s) => s.name === name);
    return step ? step.calls_planned - step.calls_done : 0;
  }

  /** Maps over a list with at most `concurrency` calls in flight; results in list order. */
  async all<T, U>(list: readonly T[], fn: (t: T, index: number) => Promise<U>): Promise<U[]> {
    const out = new Array<U>(list.length);
    let next = 0;
    const worker = async () => {
      while (next < list.length) {
        const i = next++;
        out[i] = await fn(list[i]!, i);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, list.length) }, worker));
    return out;
  }

  /**
   * One provider call inside the current wave. A failure is answered (and added to the warnings as
   * `<platform> <operation> (<label>): <message>`); an exception of the provider is rethrown (the run breaks).
   * `param` names the request parameter the call's target came from (`targets`, `accounts`): a missing or
   * invalid target's error then says which parameter to fix (`fix.param`).
   */
  async call(
    platform: Platform,
    operation: string,
    params: Record<string, unknown>,
    label?: string,
    param?: "targets" | "accounts",
  ): Promise<CallOutcome> {
    const step = this.current;
    if (!step) throw new Error(`${platform}.${operation} called outside a wave`);
    if (step.calls_done >= step.calls_planned)
      throw new Error(`the ${step.name} wave has used its ${step.calls_planned} planned calls`);
    step.calls_done++;
    this.made++;
    const provider = this.ctx.providers[platform];
    const where = `${platform} ${operation}${label ? ` (${label})` : ""}`;
    const why = provider.operations.some((o) => o.name === operation)
      ? provider.unsupported(operation, params)
      : `${platform} does not offer ${operation}.`;
    let outcome: ProviderOutcome;
    if (why !== null) outcome = { status: "not_supported", message: why };
    else outcome = await this.invoke(platform, operation, params);
    switch (outcome.status) {
      case "ok":
      case "empty":
        this.succeeded++;
        for (const w of outcome.warnings ?? []) this.warn(`${platform}: ${w}`);
        return {
          ok: true,
          status: outcome.items.length > 0 ? "ok" : "empty",
          items: outcome.status === "ok" ? outcome.items : [],
          ...(outcome.page ? { page: outcome.page } : {}),
        };
      case "error": {
        const error = envelopeError(outcome.failure, "data", this.urls);
        if (param && (error.code === "not_found" || error.code === "invalid_target")) {
          return this.failed(where, "error", {
            ...error,
            fix: {
              param,
              note: `Check ${label ?? "the link"}, or remove it from ${param}; nothing was charged for it.`,
            },
          });
        }
        return this.failed(where, "error", error);
      }
      case "not_supported":
        return this.failed(where, "not_supported", {
          code: "not_supported",
          message: outcome.message,
          retryable: false,
          action_url: capabilitiesUrl(this.urls, platform),
        });
      case "timeout":
        return this.failed(where, "timeout", { code: "timeout", message: outcome.message, retryable: false });
    }
  }

  private failed(where: string, status: "error" | "not_supported" | "timeout", error: EnvelopeError): CallOutcome {
    this.failures.push({ status, error });
    this.warn(`${where}: ${error.message}`);
    return { ok: false, status, error };
  }

  private async invoke(
    platform: Platform,
    operation: string,
    params: Record<string, unknown>,
  ): Promise<ProviderOutcome> {
    const outer = this.ctx.signal;
    outer?.throwIfAborted();
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(new CallTimeout()), this.timeoutMs);
    const onOuter = () => ctrl.abort(outer!.reason);
    outer?.addEventListener("abort", onOuter, { once: true });
    try {
      return await new Promise<ProviderOutcome>((resolve, reject) => {
        ctrl.signal.addEventListener("abort", () => reject(ctrl.signal.reason), { once: true });
        this.ctx.providers[platform].call({ platform, operation, params, signal: ctrl.signal }).then(resolve, reject);
      });
    } catch (e) {
      if (ctrl.signal.reason instanceof CallTimeout && !outer?.aborted) {
        return {
          status: "timeout",
          message: `${platform} did not answer within ${Math.round(this.timeoutMs / 1000)} s; it is unknown whether it ran. Nothing was charged for it.`,
        };
      }
      throw e;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuter);
    }
  }

  private report(): void {
    this.onStep(this.steps.map((s) => ({ ...s })));
  }

  /**
   * Ends the run with the items of the aggregation: marks the `aggregate` step and derives the status. When every
   * call failed, the items are dropped and the status is the common failure (`timeout`, `not_supported`) or
   * `error` with the first error's object.
   */
  finish(items: Item[]): RunResult {
    const allFailed = this.made > 0 && this.succeeded === 0;
    const aggregate = this.steps.find((s) => s.name === "aggregate" && s.status === "pending");
    if (aggregate) {
      aggregate.status = allFailed ? "failed" : "done";
      this.report();
    }
    const base = {
      warnings: [...this.warnings],
      calls_made: this.made,
      calls_charged: this.succeeded,
      steps: this.steps.map((s) => ({ ...s })),
    };
    if (allFailed) {
      const statuses = new Set(this.failures.map((f) => f.status));
      const common = statuses.size === 1 ? [...statuses][0]! : "error";
      const first = this.failures.find((f) => f.status === common);
      // Mixed timeouts and unsupported calls with no plain error: the run failed upstream.
      const error: EnvelopeError = first?.error ?? {
        code: "upstream_error",
        message: `Every provider call failed (${[...statuses].join(", ")}); see the warnings. Nothing was charged.`,
        retryable: true,
        action_url: this.urls.status,
      };
      return { status: common, items: [], ...base, error };
    }
    return { status: items.length > 0 ? "ok" : "empty", items: items.length > 0 ? items : [], ...base };
  }
}
