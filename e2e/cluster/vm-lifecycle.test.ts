import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { describe, expect, it } from "vitest";
import { core, nodeNames, phaseHistory, suiteNamespace } from "./cluster.ts";
import { podMetrics } from "./metrics.ts";

// A KubeVirt VM manifest applied with kubectl, on the real node: the
// controller gives it a VMI and a launcher pod that the scheduler places and
// the kubelet runs, the handler has the launcher run its domain; stopping and
// deleting the VM clean up after it.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-vm");
const poll = { timeout: 180_000, interval: 500 };

describe("a KubeVirt VM applied with kubectl", () => {
  it(
    "gets a VMI and a launcher pod on the node, running its domain; stopping " +
      "removes both; deleting leaves nothing",
    async () => {
      await kubectl("apply", "-n", namespace, "-f", join(REPO_ROOT, "examples/vm-blank-disk.yaml"));

      // The blank disk boots nothing, but the domain runs: the firmware looks for something to boot.
      await expect
        .poll(async () => (await get("virtualmachineinstances", "testvm"))?.status?.phase, poll)
        .toBe("Running");
      const vmi = await get("virtualmachineinstances", "testvm");
      const nodeName = vmi?.status?.nodeName as string;
      expect(nodeNames).toContain(nodeName);
      // Scheduling may be skipped, as in KubeVirt, when the controller first sees the launcher pod already ready.
      expect(phaseHistory(vmi)).toMatch(/^Pending,(Scheduling,)?Scheduled,Running$/);
      const pods = await launcherPods();
      expect(pods).toHaveLength(1);
      expect(pods[0]?.spec?.nodeName).toBe(nodeName);
      expect(pods[0]?.status?.phase).toBe("Running");
      expect(pods[0]?.metadata?.labels?.["kubevirt.io/created-by"]).toBe(vmi?.metadata.uid);
      // The containerDisk was copied out of its image by an init container that ran to completion.
      const copy = pods[0]?.status?.initContainerStatuses?.find((c) => c.name === "volume-containerdisk");
      expect(copy?.state?.terminated?.exitCode).toBe(0);
      // The launcher runs libvirt as its own unprivileged user and waits for the handler on its socket.
      const launcherLog = await core.readNamespacedPodLog({
        name: pods[0]?.metadata?.name ?? "",
        namespace,
        container: "compute",
      });
      expect(launcherLog).toContain('"msg":"libvirtd is up"');
      expect(launcherLog).toContain('"msg":"serving the launcher protocol"');
      await expect
        .poll(() => kubectl("get", "vm", "testvm", "-n", namespace, "-o", "jsonpath={.status.printableStatus}"), poll)
        .toBe("Running");

      // The node's handler exposes the running VMI's figures under KubeVirt's names, labels and units, read from
      // libvirt through the launcher.
      const handler = (
        await core.listNamespacedPod({
          namespace: "kubevirt-ts",
          labelSelector: "app.kubernetes.io/name=virt-handler",
          fieldSelector: `spec.nodeName=${nodeName}`,
        })
      ).items[0];
      if (!handler) throw new Error(`no virt-handler pod on ${nodeName}`);
      // With the chart's scraper token, as Prometheus reads it: /metrics answers no one else.
      const handlerMetrics = () => podMetrics(handler, "virt-handler");
      const figure = (text: string, metric: string, extra = "") =>
        Number(
          new RegExp(
            `^${metric}\\{node="${nodeName}",namespace="${namespace}",name="testvm"${extra}\\} (\\S+)$`,
            "m",
          ).exec(text)?.[1] ?? "NaN",
        );
      // A launcher that does not answer within the sampler's 5 s (a busy machine) is left out of that one scrape:
      // scraped again until it answers.
      let first = "";
      await expect
        .poll(async () => {
          first = await handlerMetrics();
          return figure(first, "kubevirt_vmi_cpu_usage_seconds_total");
        }, poll)
        .toBeGreaterThan(0);
      expect(figure(first, "kubevirt_vmi_memory_domain_bytes")).toBeGreaterThan(0);
      expect(figure(first, "kubevirt_vmi_memory_resident_bytes")).toBeGreaterThan(0);
      expect(figure(first, "kubevirt_vmi_vcpu_seconds_total", ',id="0",state="RUNNING"')).toBeGreaterThan(0);
      expect(first).toMatch(
        new RegExp(
          `^kubevirt_vmi_storage_read_traffic_bytes_total\\{node="${nodeName}",namespace="` +
            `${namespace}",name="testvm",drive="[^"]+"\\} \\d+`,
          "m",
        ),
      );
      // The counters move while the guest's firmware runs.
      await expect
        .poll(async () => figure(await handlerMetrics(), "kubevirt_vmi_cpu_usage_seconds_total"), poll)
        .toBeGreaterThan(figure(first, "kubevirt_vmi_cpu_usage_seconds_total"));

      await kubectl(
        "patch",
        "vm",
        "testvm",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Halted"}}',
      );
      await expect.poll(() => get("virtualmachineinstances", "testvm"), poll).toBeUndefined();
      await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
      await expect
        .poll(async () => (await get("virtualmachines", "testvm"))?.status?.printableStatus, poll)
        .toBe("Stopped");

      await kubectl(
        "patch",
        "vm",
        "testvm",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Always"}}',
      );
      await expect.poll(async () => (await launcherPods()).length, poll).toBe(1);
      await kubectl("delete", "vm", "testvm", "-n", namespace, "--wait=true", "--timeout=120s");
      expect(await get("virtualmachines", "testvm")).toBeUndefined();
      expect(await get("virtualmachineinstances", "testvm")).toBeUndefined();
      await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
    },
  );

  /** Each virt-controller replica's /metrics ("" for one that does not answer, e.g. while it restarts). */
  const controllerMetrics = async () => {
    const controllers = (
      await core.listNamespacedPod({
        namespace: "kubevirt-ts",
        labelSelector: "app.kubernetes.io/name=virt-controller",
      })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);
    return Promise.all(controllers.map((pod) => podMetrics(pod, "virt-controller").catch(() => "")));
  };

  it("is counted in the leading controller's REST metrics, by verb and resource", async () => {
    // Both replicas' metrics, asked again until the leader's show its work (a replica may be restarting meanwhile).
    const leaderMetrics = async () => {
      const metrics = await controllerMetrics();
      return {
        replicas: metrics.length,
        leader: metrics.find((text) =>
          /kubevirt_rest_client_requests_total\{[^}]*verb="create"[^}]*resource="virtualmachineinstances"/.test(text),
        ),
      };
    };
    await expect
      .poll(async () => {
        const { replicas, leader } = await leaderMetrics();
        return { replicas, created: leader !== undefined };
      }, poll)
      .toEqual({ replicas: 2, created: true });
    const { leader } = await leaderMetrics();
    const vmiUpdates = 'verb="update",method="PUT",resource="virtualmachineinstances",code="200"';
    expect(leader).toMatch(new RegExp(`kubevirt_rest_client_requests_total\\{${vmiUpdates}\\} \\d+`));
    expect(leader).toMatch(/workqueue_adds_total\{name="virtualmachineinstances"\} \d+/);
    // KubeVirt's histogram of how long after its creation a VMI reached each phase.
    expect(leader).toMatch(/kubevirt_vmi_phase_transition_time_from_creation_seconds_count\{phase="Running"\} [1-9]/);
  });

  it("has one controller report that it leads, and both that they are ready", async () => {
    // What KubeVirt's alerts read (the chart's prometheus-rules.yaml): kubevirt_virt_controller_{leading,ready}_status.
    const statuses = async () => {
      const texts = await controllerMetrics();
      const value = (text: string, name: string) => new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1];
      return texts.map((text) => ({
        leading: value(text, "kubevirt_virt_controller_leading_status"),
        ready: value(text, "kubevirt_virt_controller_ready_status"),
        migrationGauges: /^kubevirt_vmi_migrations_in_running_phase \d+$/m.test(text),
      }));
    };
    await expect
      .poll(async () => (await statuses()).sort((a, b) => String(a.leading).localeCompare(String(b.leading))), poll)
      .toEqual([
        { leading: "0", ready: "1", migrationGauges: true },
        { leading: "1", ready: "1", migrationGauges: true },
      ]);
  });
});
