export { type LogFields, type LogLevel, type Logger, type LoggerOptions, createLogger } from "./log.ts";
export {
  type MetricsAccess,
  type MetricsRefusal,
  type OpsServer,
  type OpsServerOptions,
  type ReadinessCheck,
  startOpsServer,
} from "./ops-server.ts";
export {
  type RunningService,
  type ServiceContext,
  type ServiceDefinition,
  StatusError,
  runService,
  startService,
} from "./service.ts";
export { LOG_LEVELS, baseEnv, metricsAuthorizationEnv, parseEnv } from "./env.ts";
export { type Pingable, keepAlive } from "./keepalive.ts";
export {
  type BufferedSocket,
  type Closable,
  type Pausable,
  type PipeBounds,
  SLOW_PEER_CLOSE_CODE,
  endSession,
  sendWithBackpressure,
} from "./backpressure.ts";
export { createSparseFile, entryAt, growFile } from "./disk-file.ts";
export {
  IMAGE_FORMATS,
  type ImageInfo,
  ImageRefused,
  QEMU_IMG_LIMITS,
  checkSelfContained,
  imagePath,
  probeImage,
  qemuImg,
} from "./disk-image.ts";
export { UPLOAD_MASTER_KEY_MIN_BYTES, deriveUploadKey, readUploadMasterKey } from "./upload-key.ts";
export { selfSignedServingCertificate } from "./x509.ts";
