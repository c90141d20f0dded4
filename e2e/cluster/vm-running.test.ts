import { zombies } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { core, createVm, imageOf, nodeNames, phaseHistory, suiteNamespace } from "./cluster.ts";
import { tinyVm } from "../manifests.ts";
import { inGuest, openConsole, serialLog } from "./console.ts";
import { mutate } from "./dashboard.ts";

// A VM that really runs: the tiny guest booted by its launcher, under the
// handler of the node, with emulation. Its boot output is in the serial log
// of its launcher.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-run");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");

const vm = tinyVm("tiny", tinyGuest, namespace);
/** A merge patch of the VM, as `kubectl patch --type=merge` sends it. */
const patchVm = (patch: string) => kubectl("patch", "vm", "tiny", "-n", namespace, "--type=merge", "-p", patch);
/** The running VMI's memory, as its spec says. */
const guestMemory = async () =>
  (
    (await get("virtualmachineinstances", "tiny")) as
      { spec?: { domain?: { memory?: { guest?: string } } } } | undefined
  )?.spec?.domain?.memory?.guest;
/** The VM's RestartRequired condition, if it has one. */
const restartRequired = async () =>
  ((await get("virtualmachines", "tiny"))?.status?.conditions as { type: string }[] | undefined)?.find(
    (c) => c.type === "RestartRequired",
  );

describe("a VM with the tiny guest", () => {
  it("runs: Running with software emulation, its pod's address, and its boot output in the serial log", async () => {
    expect(tinyGuest).toMatch(/^kubevirt-ts\.local\/tiny-guest:/);
    await createVm(namespace, vm);

    await expect.poll(async () => (await get("virtualmachineinstances", "tiny"))?.status?.phase, poll).toBe("Running");
    await expect
      .poll(async () => (await get("virtualmachines", "tiny"))?.status?.printableStatus, poll)
      .toBe("Running");
    const vmi = await get("virtualmachineinstances", "tiny");
    const conditions = vmi?.status?.conditions as { type: string; status: string }[];
    expect(conditions.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(conditions.find((c) => c.type === "SoftwareEmulation")?.status).toBe("True");
    // Scheduling may be skipped, as in KubeVirt, when the controller first sees the launcher pod already ready.
    expect(phaseHistory(vmi)).toMatch(/^Pending,(Scheduling,)?Scheduled,Running$/);
    const [pod] = await launcherPods();
    expect(nodeNames).toContain(vmi?.status?.nodeName);
    expect(pod?.spec?.nodeName).toBe(vmi?.status?.nodeName);
    expect((vmi?.status?.interfaces as { ipAddress: string }[])[0]?.ipAddress).toBe(pod?.status?.podIP);
    expect((await get("virtualmachines", "tiny"))?.status?.ready).toBe(true);

    await expect
      .poll(
        () =>
          kubectl(
            "exec",
            "-n",
            namespace,
            pod?.metadata?.name ?? "",
            "-c",
            "compute",
            "--",
            "cat",
            "/var/run/kubevirt-ts/sockets/serial0.log",
          ),
        poll,
      )
      .toContain("kubevirt-ts tiny guest: init reached");
    // As KubeVirt's: the serial log is the launcher pod's guest-console-log container's log.
    await expect
      .poll(() => kubectl("logs", "-n", namespace, pod?.metadata?.name ?? "", "-c", "guest-console-log"), poll)
      .toContain("kubevirt-ts tiny guest: init reached");
  });

  it("answers on its serial console through the handler: a command typed there runs in the guest", async () => {
    const { ws, received } = await openConsole(namespace, "tiny", "console");
    ws.send(Buffer.from("echo result=$((6*7))\n"));
    await expect.poll(() => received().toString(), poll).toContain("result=42");
    ws.close();
  });

  it(
    "resolves the cluster's Service names: QEMU's user network asks the " + "pod's resolver, the cluster's DNS",
    async () => {
      // The guest's DHCP client writes its resolver once the network is up, in the background of its boot (waited for a
      // minute at most: the shell is the next tests').
      await inGuest(
        namespace,
        "tiny",
        "for i in $(seq 60); do [ -s /etc/resolv.conf ] && break; sleep 1; done; " +
          "nslookup kubernetes.default.svc.cluster.local",
        "Address: 198.19.0.1",
      );
    },
  );

  it("answers RFB on its VNC socket through the handler", async () => {
    const { ws, received } = await openConsole(namespace, "tiny", "vnc");
    await expect.poll(() => received().toString("latin1"), poll).toMatch(/^RFB 003\.00\d\n/);
    ws.close();
  });

  it("keeps its serial output, served by the handler, including what was printed before anyone connected", async () => {
    const log = await serialLog(namespace, "tiny");
    expect(log).toContain("Linux version");
    expect(log).toContain("kubevirt-ts tiny guest: init reached");
  });

  it("keeps running while its handler is killed, and is reported correctly once the handler is back", async () => {
    const [launcherBefore] = await launcherPods();
    const phasesBefore = phaseHistory(await get("virtualmachineinstances", "tiny"));
    // The handler of the VM's own node (on two nodes, the other one's would be ready all along).
    const handlersOfNode = async () =>
      (
        await core.listNamespacedPod({
          namespace: "kubevirt-ts",
          labelSelector: "app.kubernetes.io/name=virt-handler",
          fieldSelector: `spec.nodeName=${launcherBefore?.spec?.nodeName ?? ""}`,
        })
      ).items;
    const [handler] = await handlersOfNode();
    expect(handler, "a handler on the VM's node").toBeDefined();
    await core.deleteNamespacedPod({
      name: handler?.metadata?.name ?? "",
      namespace: "kubevirt-ts",
      gracePeriodSeconds: 0,
    });
    await expect
      .poll(
        async () =>
          (await handlersOfNode()).some(
            (p) =>
              p.metadata?.uid !== handler?.metadata?.uid &&
              p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          ),
        poll,
      )
      .toBe(true);
    const [launcherAfter] = await launcherPods();
    expect(launcherAfter?.metadata?.uid).toBe(launcherBefore?.metadata?.uid);
    expect(launcherAfter?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    const vmi = await get("virtualmachineinstances", "tiny");
    expect(vmi?.status?.phase).toBe("Running");
    expect(phaseHistory(vmi)).toBe(phasesBefore);

    // The new handler really serves: a console session reaches the guest, and a pause and unpause go through it to the
    // domain.
    const { ws, received } = await openConsole(namespace, "tiny", "console");
    ws.send(Buffer.from("echo after-restart=$((6*8))\n"));
    await expect.poll(() => received().toString(), poll).toContain("after-restart=48");
    ws.close();
    const paused = async () =>
      ((await get("virtualmachineinstances", "tiny"))?.status?.conditions as { type: string; status: string }[]).find(
        (c) => c.type === "Paused",
      )?.status;
    await mutate("admin", "vms.pause", { namespace, name: "tiny" });
    await expect.poll(paused, poll).toBe("True");
    await mutate("admin", "vms.unpause", { namespace, name: "tiny" });
    await expect.poll(paused, poll).toBeUndefined();
  });

  it("leaves no zombie process in its launcher pod: tini reaps what QEMU's probes leave", async () => {
    const [pod] = await launcherPods();
    const started = new Date(pod?.status?.startTime ?? 0).getTime();
    // Orphans appear while libvirt probes QEMU at start; a minute later every one must have been reaped.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 60_000 - Date.now())));
    const launcherZombies = (await zombies()).filter((z) => /tini|\/app\/main\.js|libvirtd|virtlogd/.test(z.parent));
    expect(launcherZombies).toEqual([]);
  });

  it("waits for a restart to take a change to its template, and says so: RestartRequired", async () => {
    expect(await guestMemory()).toBe("128Mi");
    await patchVm('{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"160Mi"}}}}}}');
    await expect.poll(restartRequired, poll).toMatchObject({
      status: "True",
      message: "a non-live-updatable field was changed in the template spec",
    });
    // Staged: the running guest keeps what it started with, until the restart the next test makes.
    expect(await guestMemory()).toBe("128Mi");
  });

  it(
    "ends when its guest powers itself off: the launcher pod finishes though its " +
      "guest-console-log sidecar was running",
    async () => {
      await patchVm('{"spec":{"runStrategy":"RerunOnFailure"}}');
      const { ws } = await openConsole(namespace, "tiny", "console");
      ws.send(Buffer.from("poweroff -f\n"));
      // RerunOnFailure: a VMI that Succeeded is removed and not started again.
      await expect.poll(() => get("virtualmachineinstances", "tiny"), poll).toBeUndefined();
      await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
      await expect
        .poll(async () => (await get("virtualmachines", "tiny"))?.status?.printableStatus, poll)
        .toBe("Stopped");
      ws.close();
      await patchVm('{"spec":{"runStrategy":"Always"}}');
      await expect
        .poll(async () => (await get("virtualmachineinstances", "tiny"))?.status?.phase, poll)
        .toBe("Running");
      // Started again, from the template as the previous test changed it: no restart is wanted any more.
      expect(await guestMemory()).toBe("160Mi");
      await expect.poll(restartRequired, poll).toBeUndefined();
    },
  );

  it("stops: the guest, its launcher pod and its VMI go, and the VM shows Stopped", async () => {
    await patchVm('{"spec":{"runStrategy":"Halted"}}');
    await expect.poll(() => get("virtualmachineinstances", "tiny"), poll).toBeUndefined();
    await expect.poll(async () => (await launcherPods()).length, poll).toBe(0);
    await expect
      .poll(async () => (await get("virtualmachines", "tiny"))?.status?.printableStatus, poll)
      .toBe("Stopped");
  });
});
