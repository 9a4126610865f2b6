/** The connector acceptance suite passes on the YouTube connector (against the fake upstream) and on the simulator. */
import { describe, expect, it } from "vitest";
import { formatConnectorReport, runConnectorAcceptance } from "../src/connectors/index.ts";
import { redditSubject } from "./reddit-subject.ts";
import { xSubject } from "./x-subject.ts";
import { simulatorSubject, youtubeSubject } from "./youtube-subject.ts";

describe("the connector acceptance suite", () => {
  it("passes on the YouTube connector, every check applicable", async () => {
    const report = await runConnectorAcceptance(youtubeSubject());
    expect(
      report.results.filter((r) => r.outcome !== "passed"),
      formatConnectorReport(report),
    ).toEqual([]);
    expect(report.passed).toBeGreaterThanOrEqual(25);
  }, 120_000);

  it("passes on the Reddit connector, every check applicable", async () => {
    const report = await runConnectorAcceptance(redditSubject());
    expect(
      report.results.filter((r) => r.outcome !== "passed"),
      formatConnectorReport(report),
    ).toEqual([]);
    expect(report.passed).toBeGreaterThanOrEqual(25);
  }, 120_000);

  it("passes on the X connector, every check applicable; trending refused as not available", async () => {
    const report = await runConnectorAcceptance(xSubject());
    expect(
      report.results.filter((r) => r.outcome !== "passed"),
      formatConnectorReport(report),
    ).toEqual([]);
    expect(report.results.find((r) => r.id === "read.trending")?.title).toContain("not_available_yet");
    expect(report.passed).toBeGreaterThanOrEqual(25);
  }, 120_000);

  it("passes on the simulator; the checks of settings, secrets and an upstream are not applicable", async () => {
    const report = await runConnectorAcceptance(simulatorSubject());
    expect(
      report.results.filter((r) => r.outcome === "failed"),
      formatConnectorReport(report),
    ).toEqual([]);
    expect(report.results.filter((r) => r.outcome === "not_applicable").map((r) => r.id)).toEqual([
      "config.bad-settings",
      "secrets.not-shown",
      "upstream.all-answered",
    ]);
  }, 60_000);
});
