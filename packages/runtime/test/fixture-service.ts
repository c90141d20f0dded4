// A process for service.test.ts: runs a service until it is signalled.
import { runService } from "../src/index.ts";

await runService({
  name: "fixture",
  opsPort: 0,
  start: ({ log }) => {
    log.info("working");
    return Promise.resolve(async () => {
      log.info("work stopped");
      await Promise.resolve();
    });
  },
});
