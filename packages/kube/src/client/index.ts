export { ApiError, isAlreadyExists, isConflict, isForbidden, isGone, isNotFound } from "./errors.ts";
export { type RestClientMetrics, createRestClientMetrics } from "./metrics.ts";
export { type ResourceType, resourcePath, resources } from "./resources.ts";
export { type DeleteOptions, KubeClient, type ListOptions, type PatchType, type WatchOptions } from "./rest.ts";
export * from "./types.ts";
export { apiResourceCheck, loadKubeConfig } from "./kubeconfig.ts";
export {
  METRICS_READER_ROLE,
  METRICS_READERS_LIMITS,
  type MetricsReadersOptions,
  componentMetricsAccess,
  metricsReaders,
} from "./metrics-readers.ts";
export { type ReviewedUser, TOKEN_REVIEW_LIMITS, type TokenReviewOptions, tokenReviews } from "./token-reviews.ts";
