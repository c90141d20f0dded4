export {
  type CheckedParams, type DomainChange, type DomainStatus, type ErrorCode, ERROR_CODES, MAX_ERROR_MESSAGE_LENGTH, MAX_REQUEST_LINE_BYTES, MAX_RESPONSE_LINE_BYTES, METHODS, type Method,
  PROTOCOL_VERSION, type Params, type Request, type Response, type Result, type DomainStats, describeIssues, domainChange, domainStats, domainStatus, launcherMethods, MAX_WATCH_SECONDS,
  type MigrationOptions, type MigrationProgress, type MigrationReport, type MigrationStatus, KEPT_MIGRATION_REPORTS, MIGRATION_REPORT_RETENTION_MS, migrationOptions, migrationProgress, migrationReport, migrationStatus,
} from "./protocol.ts";
export {
  LauncherBusyError, LauncherCallError, LauncherError, LauncherProtocolError, LauncherTimeoutError, LauncherUnreachableError, type ProtocolViolation,
} from "./errors.ts";
export { type CallOptions, LauncherClient, MAX_PENDING_CALLS } from "./client.ts";
export { type Handlers, RpcError, answer, serveConnection } from "./server.ts";
export { LineReader, LineTooLongError } from "./lines.ts";
export { ANSWER_BOUNDS, bounded, overBounds } from "./bounds.ts";
export { MIGRATION_SOCKETS, type MigrationSocket } from "./migration.ts";
export {
  HEADER_TIMEOUT_MS, MAX_HEADER_BYTES, MIGRATION_PROXY_VERSION, type MigrationProxyHeader, type MigrationSourceProxy, type MigrationSourceProxyOptions, MigrationTargetProxy,
  type MigrationTargetProxyOptions, type ProxyLog, type ProxyTls, type TargetSocket, dialMigrationTarget, joinStreams, migrationProxyHeader, startMigrationSourceProxy,
} from "./migration-proxy.ts";
