import { execFile, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { tinyVm } from "../manifests.ts";
import { core, imageOf, suiteNamespace } from "./cluster.ts";

// What older and stricter KubeVirt clients expect of the API, on one tiny
// guest (no guest agent): kubevirt.io/v1alpha3 served as KubeVirt serves it
// (deprecated, with its warning, the same objects as v1), status fields that
// KubeVirt always writes (guestOSInfo as an object), and the events KubeVirt's
// handler records on a VMI through its life on the node.

const { name: namespace, kubectl, get } = suiteNamespace("e2e-clients");
const poll = { timeout: 180_000, interval: 1_000 };
const WARNING = "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.";
/** The most of a watch's output read: a few events of one small VM. */
const MAX_WATCH_BYTES = 1024 * 1024;

async function kubectlWithWarnings(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = join(await ensureBinaries(["kubectl"]), "kubectl");
  return promisify(execFile)(bin, [`--kubeconfig=${KUBECONFIG_PATH}`, ...args]);
}

/**
 * A watch of the namespace's VMs at kubevirt.io/v1alpha3 (kubectl get --raw ?watch): the first event naming `name`. A
 * watch from no resourceVersion begins with the objects there are, so one made before or after the VM sees it.
 */
async function watchV1alpha3For(
  name: string,
): Promise<{ type: string; object: { apiVersion: string; metadata: { name: string } } }> {
  const bin = join(await ensureBinaries(["kubectl"]), "kubectl");
  const child = spawn(
    bin,
    [
      `--kubeconfig=${KUBECONFIG_PATH}`,
      "get",
      "--raw",
      `/apis/kubevirt.io/v1alpha3/namespaces/${namespace}/virtualmachines?watch=true&timeoutSeconds=170`,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let text = "";
  return new Promise<{ type: string; object: { apiVersion: string; metadata: { name: string } } }>(
    (resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        if (text.length > MAX_WATCH_BYTES) {
          child.kill();
          reject(new Error(`the watch sent more than ${String(MAX_WATCH_BYTES)} bytes without naming ${name}`));
          return;
        }
        for (const line of text.split("\n").slice(0, -1)) {
          const event = JSON.parse(line) as {
            type: string;
            object: { apiVersion: string; metadata: { name: string } };
          };
          if (event.object.metadata.name === name) {
            child.kill();
            resolve(event);
          }
        }
      });
      child.once("exit", (code) => {
        reject(new Error(`the v1alpha3 watch ended (${String(code)}) without naming ${name}: ${text.slice(0, 2000)}`));
      });
    },
  );
}

interface Event {
  reason?: string;
  type?: string;
  message?: string;
  source?: { component?: string };
  metadata: { resourceVersion?: string };
  lastTimestamp?: Date;
}

/** The reasons of the events virt-handler recorded on the object of that uid, in the order they were made. */
async function handlerEvents(uid: string): Promise<string[]> {
  const events = (await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` }))
    .items as Event[];
  return events
    .filter((e) => e.source?.component === "virt-handler")
    .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))
    .map((e) => `${e.type ?? ""} ${e.reason ?? ""}`);
}

async function putSubresource(path: string): Promise<void> {
  const body = join(await mkdtemp(join(tmpdir(), "options-")), "options.json");
  await writeFile(body, "{}");
  await kubectl("replace", "--raw", path, "-f", body);
}

const conditionStatus = async (type: string) =>
  (
    (await get("virtualmachineinstances", "old-client"))?.status?.conditions as
      { type: string; status: string }[] | undefined
  )?.find((c) => c.type === type)?.status;

describe("an older KubeVirt client", () => {
  it(
    "creates a VM as kubevirt.io/v1alpha3 with kubectl: warned, watched at v1alpha3, read back " +
      "as v1; its VMI has KubeVirt's shape and handler events",
    { timeout: 600_000 },
    async () => {
      const watched = watchV1alpha3For("old-client");
      // Awaited below; a watch that fails before then fails the test there, not as an unhandled rejection.
      watched.catch(() => undefined);
      const manifest = join(await mkdtemp(join(tmpdir(), "v1alpha3-")), "vm.json");
      await writeFile(
        manifest,
        JSON.stringify({
          ...tinyVm("old-client", imageOf("tiny-guest"), namespace),
          apiVersion: "kubevirt.io/v1alpha3",
        }),
      );
      const created = await kubectlWithWarnings("create", "-f", manifest);
      expect(created.stdout).toContain("virtualmachine.kubevirt.io/old-client created");
      expect(created.stderr).toContain(`Warning: ${WARNING}`);

      expect(await watched).toMatchObject({ type: "ADDED", object: { apiVersion: "kubevirt.io/v1alpha3" } });
      const asV1 = await get("virtualmachines", "old-client");
      expect((asV1 as { apiVersion?: string } | undefined)?.apiVersion).toBe("kubevirt.io/v1");
      expect(
        await kubectl(
          "get",
          "virtualmachines.v1alpha3.kubevirt.io",
          "old-client",
          "-n",
          namespace,
          "-o",
          "jsonpath={.apiVersion}",
        ),
      ).toBe("kubevirt.io/v1alpha3");

      await expect
        .poll(async () => (await get("virtualmachineinstances", "old-client"))?.status?.phase, poll)
        .toBe("Running");
      await expect
        .poll(
          () => kubectl("get", "vm", "old-client", "-n", namespace, "-o", "jsonpath={.status.printableStatus}"),
          poll,
        )
        .toBe("Running");
      // No guest agent: guestOSInfo is there all the same, an object, as KubeVirt's struct value always is; runtimeUser
      // too.
      const vmi = await get("virtualmachineinstances", "old-client");
      expect(vmi?.status?.guestOSInfo).toEqual({});
      expect(vmi?.status?.runtimeUser).toBe(107);
      expect(
        JSON.parse(
          await kubectl(
            "get",
            "virtualmachineinstances.v1alpha3.kubevirt.io",
            "old-client",
            "-n",
            namespace,
            "-o",
            "json",
          ),
        ) as { status: { guestOSInfo: unknown } },
      ).toMatchObject({ status: { guestOSInfo: {} } });

      const vmiPath = (sub: string) =>
        `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/old-client/${sub}`;
      await putSubresource(vmiPath("pause"));
      await expect.poll(() => conditionStatus("Paused"), poll).toBe("True");
      await putSubresource(vmiPath("unpause"));
      await expect.poll(() => conditionStatus("Paused"), poll).toBeUndefined();
      await kubectl(
        "patch",
        "vm",
        "old-client",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Halted"}}',
      );
      await expect.poll(() => get("virtualmachineinstances", "old-client"), poll).toBeUndefined();

      // KubeVirt's handler's events, in its order: the domain defined and started, paused, unpaused, its shutdown
      // signalled, (turned off, if the guest did not shut down within its grace period), and stopped.
      const uid = vmi?.metadata.uid ?? "";
      const expected = (killed: boolean) => [
        "Normal Created",
        "Normal Started",
        "Normal Paused",
        "Normal Unpaused",
        "Normal ShuttingDown",
        ...(killed ? ["Normal Deleted"] : []),
        "Normal Stopped",
      ];
      await expect
        .poll(async () => {
          const events = await handlerEvents(uid);
          return events.at(-1);
        }, poll)
        .toBe("Normal Stopped");
      const events = await handlerEvents(uid);
      expect(events).toEqual(expected(events.includes("Normal Deleted")));
    },
  );
});
