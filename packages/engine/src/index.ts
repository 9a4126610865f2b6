/**
 * {@include ../README.md}
 *
 * @packageDocumentation
 * @module @sdgw/engine
 */
export { Catalog, ROUTES, TOOL_DESCRIPTIONS, TOOL_OPERATION_IDS, isRouteOperation, paramsOf } from "./catalog.ts";
export type { PlatformSourceInfo } from "./catalog.ts";
export { notAvailableYet, planExtra, planPlatforms, planTargets, quoteOf } from "./plan.ts";
export type { CallPlan, PlanRefusal, PlanResult, PlannedCall } from "./plan.ts";
export { planOperation, planRoute } from "./route-plan.ts";
export type { DataRouteId, RouteBodyCheck } from "./route-plan.ts";
export { purchaseRefusal, refusalAnswer } from "./refusals.ts";
export { keyPrefix, presentedKey } from "./keys.ts";
export { KEY_REFUSALS, MESSAGES, REFUSALS, tooManySchedules } from "./messages.ts";
export type { RefusalFields } from "./messages.ts";
export type { PresentedKey } from "./keys.ts";
export type { RefusalAnswer } from "./refusals.ts";
export { Finder, words } from "./find.ts";
export type { FindMatch } from "./find.ts";
export {
  capabilitiesUrl,
  cellOf,
  creditBilling,
  dataBilling,
  deriveStatus,
  entryOf,
  envelopeError,
  finishedAnswer,
  notSupportedEntry,
  runningAnswer,
} from "./answers.ts";
export type { CreditView, EndedCall, Entry, RunningParts } from "./answers.ts";
export { toolAnswer, toolQuoteAnswer } from "./tool-answers.ts";
export type { ToolAnswerParts } from "./tool-answers.ts";
export { TOOLS, ToolRefusedError, creditsFor, followerReadings, toolCharge } from "./tools/index.ts";
export { EVERY_MS, scheduleParams } from "./tools/index.ts";
export type { AccountReading } from "./tools/index.ts";
export type { FollowerReading, RunResult, ToolContext, ToolModule, ToolPlan, ToolRefusal } from "./tools/index.ts";
export type { PlanResult as ToolPlanResult } from "./tools/index.ts";
export { ROUTE_OPERATIONS } from "./providers/port.ts";
export { isPlatformFailure, platformFailure } from "./providers/failures.ts";
export type { PlatformFailure } from "./providers/failures.ts";
export type {
  CredentialsCheck,
  OpParam,
  OperationSpec,
  PlatformProvider,
  ProviderFailure,
  ProviderOutcome,
  ProviderRequest,
  ProviderSource,
  RouteOperation,
  UpstreamUsage,
} from "./providers/port.ts";
export { PLATFORM_MODULES, Simulator, encodeCursor, seedText } from "./providers/simulator/index.ts";
export type { SimulatorKnobs, SimulatorOptions } from "./providers/simulator/index.ts";
export type { FakeContext, PlatformModule } from "./providers/simulator/module.ts";
export { DAY_MS, isoSeconds, utcDayStart } from "./time.ts";
export { base64url, fromBase64url } from "./encoding.ts";
export { chargeCall, chargeRefusalAnswer, creditView, holdRefusal, limitAnswer } from "./charging.ts";
export type {
  ChargeCall,
  ChargeOutcome,
  ChargePorts,
  ChargeRefusal,
  ChargeRefusalAnswer,
  ChargeWords,
  CreditScope,
  HoldState,
  KeyCredits,
  Price,
} from "./charging.ts";
export type {
  AdmitRequest,
  Admitted,
  Awaitable,
  CallLimits,
  CallStore,
  Claim,
  HoldRefusal,
  IdempotencySlot,
  LimitRefusal,
} from "./storage.ts";
