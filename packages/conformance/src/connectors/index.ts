/**
 * `@sdgw/conformance/connectors`: the connector acceptance suite (D114) and the fake upstream it runs against —
 * for our connectors and an operator's own. `startFakeUpstream` answers hand-written upstream exchanges on
 * 127.0.0.1 and fails loudly on any other request; `loadExchanges` reads them from a folder in the layout of
 * `fixtures/upstream/<platform>/`; `runConnectorAcceptance` runs every check on a `ConnectorSubject`.
 *
 * @packageDocumentation
 * @module @sdgw/conformance/connectors
 */
export { formatConnectorReport, runConnectorAcceptance } from "./acceptance.ts";
export type {
  BadSettings,
  ConnectorAcceptanceOptions,
  ConnectorCheckResult,
  ConnectorFault,
  ConnectorReport,
  ConnectorSubject,
  TargetOperation,
} from "./acceptance.ts";
export { startFakeUpstream } from "./fake-upstream.ts";
export type { FakeUpstream, ReceivedRequest, UpstreamOverride } from "./fake-upstream.ts";
export { loadExchanges } from "./load.ts";
