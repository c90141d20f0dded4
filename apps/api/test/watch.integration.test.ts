import { test } from "@kubevirt-ts/control-plane/testing";
import { KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";
import { describe, expect } from "vitest";
import { type WatchMessage, listThenWatch } from "../src/trpc/watch.ts";

// The SSE watch's queue against a real API server: a client that stops
// reading while the cluster changes is held to the queue's bound, and once it
// reads again it gets a fresh list that holds every change it was not sent.

const CONFIG_MAPS = 30;
const QUEUE = { events: 5, bytes: 1024 * 1024 };

describe("the SSE watch", () => {
  test(
    "holds at most its bound for a client that stopped reading, then sends a " + "fresh list with everything it missed",
    async ({ kubeConfig, core, namespace }) => {
      const client = await KubeClient.fromKubeConfig(kubeConfig);
      const abort = new AbortController();
      let fellBehind = 0;
      const stream = listThenWatch<KubeObject>(client, resources.configMaps, namespace, undefined, abort.signal, {
        queue: QUEUE,
        fellBehind: () => {
          fellBehind++;
        },
      });
      const names = (message: WatchMessage<KubeObject>) =>
        (message.type === "LIST" ? message.items : [message.object])
          .map((item) => item.metadata.name ?? "")
          .filter((name) => name.startsWith("cm-"));
      const next = async () => {
        const result = await stream.next();
        if (result.done) throw new Error("the stream ended");
        return result.value[1];
      };
      expect((await next()).type).toBe("LIST");
      // The client asks for one event (the watch starts), then reads nothing while the config maps are made.
      const first = next();
      const made = Array.from({ length: CONFIG_MAPS }, (_, i) => `cm-${String(i).padStart(2, "0")}`);
      for (const name of made)
        await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { n: name } } });
      expect(names(await first)).toEqual(["cm-00"]);
      const deadline = Date.now() + 10_000;
      while (fellBehind === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fellBehind).toBe(1);
      // Reading again: what the queue held was dropped; a fresh list has all of them.
      const sent: string[] = ["cm-00"];
      let message = await next();
      while (message.type !== "LIST") {
        sent.push(...names(message));
        message = await next();
      }
      expect(sent.length).toBeLessThanOrEqual(1 + QUEUE.events);
      expect(names(message)).toEqual(made);
      // And the watch goes on from the list.
      const after = next();
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "cm-after" } } });
      expect(await after).toMatchObject({ type: "ADDED", object: { metadata: { name: "cm-after" } } });
      abort.abort();
      await stream.return(undefined);
    },
  );
});
