// A process for service.test.ts: runs a service until it is signalled; with
// the argument "throw" or "reject", its work then fails as a bug would, with
// an exception or a rejection nothing handles.
import { runService } from "../src/index.ts";

const failure = process.argv[2];

await runService({
  name: "fixture",
  opsPort: 0,
  start: ({ log }) => {
    log.info("working");
    if (failure === "throw") {
      setTimeout(() => {
        throw new Error("a bug in the work");
      }, 10);
    }
    if (failure === "reject") setTimeout(() => void Promise.reject(new Error("a forgotten promise")), 10);
    return Promise.resolve(async () => {
      log.info("work stopped");
      await Promise.resolve();
    });
  },
});
