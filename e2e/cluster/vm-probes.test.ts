import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NODE_IP } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { tinyVm } from "../manifests.ts";
import { core, createVm, custom, imageOf, suiteNamespace } from "./cluster.ts";
import { inGuest } from "./console.ts";

// KubeVirt's liveness probe, on the tiny guest: the kubelet runs it on the
// launcher container on the VMI's schedule, and the launcher checks the
// guest (ADR 11). A liveness probe that fails ends the VMI, and its VM
// starts a new one. An HTTPS readiness probe, on a guest of the bridge
// binding, which takes the pod's own address (ADR 34): the kubelet's probe
// runs the probe client in the launcher container. Readiness under the
// masquerade is shown on the Debian guest (vm-debian.test.ts); the TCP check
// itself in the launcher's integration tests.

const { name: namespace, get, launcherPods } = suiteNamespace("e2e-probes");
const poll = { timeout: 180_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");

function withProbes(name: string, probes: Record<string, unknown>, binding?: "bridge") {
  const vm = tinyVm(name, tinyGuest, namespace, binding);
  Object.assign(vm.spec.template.spec, probes);
  return vm;
}

describe("a VM with a liveness probe that fails", () => {
  it("has its VMI stopped by the kubelet, saying why, and started again by its VM", async () => {
    // Nothing in the tiny guest listens on port 80.
    const vm = withProbes("doomed", {
      livenessProbe: { tcpSocket: { port: 80 }, initialDelaySeconds: 10, periodSeconds: 2, failureThreshold: 2 },
    });
    await createVm(namespace, vm);
    await expect
      .poll(async () => (await get("virtualmachineinstances", "doomed"))?.status?.phase, poll)
      .toBe("Running");
    const first = (await get("virtualmachineinstances", "doomed"))?.metadata.uid;
    const [pod] = await launcherPods();
    expect(pod?.spec?.containers.find((c) => c.name === "compute")?.livenessProbe).toMatchObject({
      httpGet: { path: "/probes/liveness", port: "ops" },
      initialDelaySeconds: 10,
      periodSeconds: 2,
      failureThreshold: 2,
      timeoutSeconds: 2,
    });

    // The VM's events keep why its VMI failed: the launcher's word, through its pod's termination message.
    const vmEvents = async () =>
      (
        await core.listNamespacedEvent({
          namespace,
          fieldSelector: "involvedObject.kind=VirtualMachine,involvedObject.name=doomed",
        })
      ).items
        .map((e) => e.message ?? "")
        .join("\n");
    await expect
      .poll(vmEvents, poll)
      .toMatch(
        new RegExp(
          `deleting the virtual machine instance ${first ?? ""}, which failed: The virt-launcher pod ended ` +
            "\\(Failed\\): The liveness probe failed: tcp port 80: the guest (refused the connection|did not " +
            "accept the connection in time)",
        ),
      );
    // The kubelet said so on the pod too.
    const podEvents = (
      await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${pod?.metadata?.name ?? ""}` })
    ).items;
    expect(podEvents.map((e) => `${e.reason ?? ""}: ${e.message ?? ""}`).join("\n")).toMatch(
      /Unhealthy: Liveness probe failed/,
    );
    // runStrategy Always: a new VMI runs, after the crash-loop back-off.
    await expect
      .poll(async () => {
        const vmi = await get("virtualmachineinstances", "doomed");
        return vmi?.metadata.uid !== first && vmi?.status?.phase === "Running";
      }, poll)
      .toBe(true);
    await custom.deleteNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      name: "doomed",
    });
  });
});

describe("a VM with an HTTPS readiness probe, on the bridge binding", () => {
  it(
    "takes the pod's address, which answers a ping itself; is Ready while the guest's port answers over TLS (the " +
      "certificate not checked, as the kubelet's), and not once it answers 503",
    async () => {
      // An HTTPS server of the test's own, on the node's address, self-signed: the guest relays its port 8443 to it.
      const dir = mkdtempSync(join(tmpdir(), "https-probe-"));
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-subj",
          "/CN=probe.test",
          "-days",
          "1",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stdio: "ignore" },
      );
      let status = 200;
      const seen: string[] = [];
      const server = createServer(
        { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
        (req, res) => {
          seen.push(`${req.method ?? ""} ${req.url ?? ""} ${req.headers["user-agent"] ?? ""}`);
          res.writeHead(req.url === "/ready" ? status : 404).end();
        },
      );
      await new Promise<void>((resolve) => server.listen(0, NODE_IP, resolve));
      const port = (server.address() as { port: number }).port;
      try {
        const vm = withProbes(
          "secure",
          {
            readinessProbe: {
              httpGet: { port: 8443, path: "/ready", scheme: "HTTPS" },
              periodSeconds: 2,
              failureThreshold: 1,
            },
          },
          "bridge",
        );
        await createVm(namespace, vm);
        const ready = async () =>
          (
            (await get("virtualmachineinstances", "secure"))?.status?.conditions as
              { type: string; status: string }[] | undefined
          )?.find((c) => c.type === "Ready")?.status;
        await expect
          .poll(async () => (await get("virtualmachineinstances", "secure"))?.status?.phase, poll)
          .toBe("Running");
        // Nothing listens on 8443 in the guest yet.
        expect(await ready()).not.toBe("True");
        // The guest has the pod's address, and answers a ping there itself; its probes run the probe client.
        const pod = (await launcherPods()).find((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "secure");
        const podIP = pod?.status?.podIP ?? "no pod address";
        expect(pod?.spec?.containers.find((c) => c.name === "compute")?.readinessProbe).toMatchObject({
          exec: { command: ["/usr/local/bin/kubevirt-ts-probe", "9102", "/probes/readiness"] },
        });
        const guest = await inGuest(
          namespace,
          "secure",
          // The guest's DHCP may still be under way: it waits for its address, a minute at most.
          "for i in $(seq 60); do ip -4 -o addr show eth0 | grep -q inet && break; sleep 1; done; " +
            "echo addr=$(ip -4 -o addr show eth0 | tr -s ' ' | cut -d' ' -f4)=",
          `addr=${podIP}/`,
          poll,
        );
        expect(guest).toContain(`addr=${podIP}/`);
        await promisify(execFile)("busybox", ["ping", "-c", "1", "-W", "5", podIP]);
        const vmi = await get("virtualmachineinstances", "secure");
        const interfaces = vmi?.status?.interfaces as { ipAddress?: string }[] | undefined;
        expect(interfaces?.[0]?.ipAddress).toBe(podIP);
        expect(
          (vmi?.status?.conditions as { type: string; status: string; reason?: string }[] | undefined)?.find(
            (c) => c.type === "LiveMigratable",
          ),
        ).toMatchObject({ status: "False", reason: "InterfaceNotLiveMigratable" });
        // busybox's nc relays each connection to the test's server, from the pod's address.
        await inGuest(
          namespace,
          "secure",
          `(nc -ll -p 8443 -e nc ${NODE_IP} ${String(port)} &) && echo relay-$((40+2))`,
          "relay-42",
          poll,
        );
        await expect.poll(ready, poll).toBe("True");
        expect(seen).toContain("GET /ready kube-probe/kubevirt-ts");
        status = 503;
        await expect.poll(ready, poll).toBe("False");
        await custom.deleteNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachines",
          name: "secure",
        });
      } finally {
        server.close();
      }
    },
  );
});
