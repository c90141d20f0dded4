export { type Clock, realClock } from "./clock.ts";
export { type WorkQueueMetrics, createWorkQueueMetrics } from "./metrics.ts";
export { type WorkQueueOptions, WorkQueue } from "./queue.ts";
export {
  type RateLimiter,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  defaultControllerRateLimiter,
} from "./rate-limiter.ts";
