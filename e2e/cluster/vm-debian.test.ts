import { execFile, execFileSync } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig, type V1Endpoint } from "@kubernetes/client-node";
import type { ConsoleKind } from "@kubevirt-ts/kubevirt-api";
import { KUBECONFIG_PATH } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { core, createVm, custom, discovery, editorToken, imageOf, suiteNamespace } from "./cluster.ts";
import { openConsole, serialLog, serialLogin } from "./console.ts";
import { environmentWith } from "./env.ts";

// A real Debian guest from a KubeVirt-style containerDisk: it boots from
// its own disk, cloud-init reads the NoCloud user data the VM keeps in a
// Secret (secretRef, so the password is not in the spec), systemd puts a
// login prompt on the serial console, and a user logs in there through the
// handler and runs commands that reach out of the pod. It is sized and
// shaped as KubeVirt users write it: the chart's u1.small instancetype and
// debian preference, so it boots through EFI (OVMF, secure boot off) with
// virtio devices, as on a KubeVirt cluster, and with an emulated TPM.

const { name: namespace, get, kubectl, launcherPods } = suiteNamespace("e2e-debian");
const boot = { timeout: 600_000, interval: 2_000 };
const debianGuest = imageOf("debian-guest");
const password = "kubevirt-ts-e2e";

const vm = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "debian", namespace },
  spec: {
    runStrategy: "Always",
    instancetype: { name: "u1.small" },
    preference: { name: "debian" },
    template: {
      spec: {
        domain: {
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" } },
              { name: "cloudinit", disk: { bus: "virtio" } },
              { name: "app-config", disk: { bus: "virtio" } },
              { name: "meta", disk: { bus: "virtio" } },
            ],
            // An emulated TPM 2.0, as a Windows-style VM has (the guest's kernel drives it: /sys/class/tpm/tpm0).
            tpm: {},
            // No ports listed: KubeVirt's masquerade forwards every port of the pod's address to the guest (sshd, a web
            // server), and ICMP echo.
            interfaces: [{ name: "default", masquerade: {} }],
          },
        },
        networks: [{ name: "default", pod: {} }],
        terminationGracePeriodSeconds: 30,
        // An SSH public key from a Secret, which cloud-init gives the guest's default user (debian); another, which the
        // guest agent gives the user tester, and a password it sets for debian.
        accessCredentials: [
          {
            sshPublicKey: { source: { secret: { secretName: "debian-ssh-key" } }, propagationMethod: { noCloud: {} } },
          },
          {
            sshPublicKey: {
              source: { secret: { secretName: "debian-agent-key" } },
              propagationMethod: { qemuGuestAgent: { users: ["tester"] } },
            },
          },
          {
            userPassword: {
              source: { secret: { secretName: "debian-passwords" } },
              propagationMethod: { qemuGuestAgent: {} },
            },
          },
        ],
        // KubeVirt's probes through the guest agent: ready while /tmp/unready is absent, alive while the agent answers
        // (with room for a slow boot under emulation before the kubelet would stop it).
        readinessProbe: {
          exec: { command: ["test", "!", "-e", "/tmp/unready"] },
          periodSeconds: 3,
          timeoutSeconds: 5,
          failureThreshold: 1,
        },
        livenessProbe: {
          guestAgentPing: {},
          initialDelaySeconds: 120,
          periodSeconds: 10,
          timeoutSeconds: 5,
          failureThreshold: 30,
        },
        volumes: [
          { name: "root", containerDisk: { image: debianGuest } },
          { name: "cloudinit", cloudInitNoCloud: { secretRef: { name: "debian-cloud-init" } } },
          // A ConfigMap's keys and the launcher pod's labels as labelled ISO disks, which cloud-init mounts.
          { name: "app-config", configMap: { name: "debian-app", volumeLabel: "app-config" } },
          {
            name: "meta",
            downwardAPI: {
              volumeLabel: "meta",
              fields: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }],
            },
          },
        ],
      },
    },
  },
};

/** The cloud-init user data, in the Secret the VM names; only its launcher pod reads it, through a Secret volume. */
const cloudInitSecret = {
  metadata: { name: "debian-cloud-init", namespace },
  stringData: {
    userdata: [
      "#cloud-config",
      "users:",
      "  - default",
      "  - name: tester",
      "    lock_passwd: false",
      `    plain_text_passwd: ${password}`,
      "    shell: /bin/bash",
      // sshd takes passwords too, so that a test can log in with the one the guest agent sets.
      "ssh_pwauth: true",
      "runcmd:",
      "  - [sh, -c, 'mkdir -p /mnt/app-config /mnt/meta && mount -o ro /dev/disk/by-label/app-config " +
        "/mnt/app-config && mount -o ro /dev/disk/by-label/meta /mnt/meta']",
      "",
    ].join("\n"),
  },
};

/** A key pair made for the suite: its public half goes to the guest through the VM's access credentials. */
const sshKeyDir = mkdtempSync(join(tmpdir(), "debian-ssh-"));
const sshKey = join(sshKeyDir, "id_ed25519");
execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "e2e@kubevirt-ts", "-f", sshKey]);
const sshKeySecret = {
  metadata: { name: "debian-ssh-key", namespace },
  stringData: { key: readFileSync(`${sshKey}.pub`, "utf8") },
};
/** A key pair whose public key the guest agent gives tester, a second one it is rotated to, and debian's password. */
const agentKeys = ["first", "second"].map((name) => {
  const file = join(sshKeyDir, `agent-${name}`);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `agent-${name}@kubevirt-ts`, "-f", file]);
  return file;
});
const agentKeySecret = (file: string) => ({
  metadata: { name: "debian-agent-key", namespace },
  stringData: { key: readFileSync(`${file}.pub`, "utf8") },
});
const agentPassword = "set-by-the-guest-agent";
const passwordsSecret = { metadata: { name: "debian-passwords", namespace }, stringData: { debian: agentPassword } };

/** The ConfigMap the VM presents to its guest as a disk. */
const appConfig = { metadata: { name: "debian-app", namespace }, data: { greeting: "hello from a ConfigMap" } };

/**
 * A console, VNC or port forward session as virtctl opens it: a websocket to the Kubernetes API server's own
 * address, which authenticates the token, authorizes get on the subresource and passes the upgrade to virt-api
 * through the aggregation layer. TLS is checked against the local cluster's CA; the token alone says who asks.
 */
async function openThroughApiServer(
  kind: ConsoleKind | `portforward/${string}`,
  token: string,
  resource = "virtualmachineinstances",
): Promise<{ ws: WebSocket; received: () => Buffer }> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(KUBECONFIG_PATH);
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error(`no cluster in ${KUBECONFIG_PATH}`);
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, "base64")
    : readFileSync(cluster.caFile ?? `${KUBECONFIG_PATH} names no CA for its cluster`);
  const url = new URL(
    `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/${resource}/debian/${kind}`,
    cluster.server,
  );
  url.protocol = "wss:";
  const ws = new WebSocket(url, ["plain.kubevirt.io"], { ca, headers: { authorization: `Bearer ${token}` } });
  const chunks: Buffer[] = [];
  ws.on("message", (data: Buffer) => chunks.push(data));
  const refused = new Promise<never>((_, reject) => {
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res
        .setEncoding("utf8")
        .on("data", (c: string) => (body += c))
        .on("end", () => {
          reject(new Error(`the API server refused the ${kind} session: ${String(res.statusCode)} ${body}`));
        });
    });
    ws.once("error", reject);
  });
  // Once open, a later error or close is the test's to see in what it reads, not an unhandled rejection.
  void refused.catch(() => undefined);
  await Promise.race([once(ws, "open"), refused]);
  expect(ws.protocol).toBe("plain.kubevirt.io");
  return { ws, received: () => Buffer.concat(chunks) };
}

describe("a VM with the Debian guest", () => {
  it("boots from its containerDisk to a login prompt, which the handler kept before anyone connected", async () => {
    expect(debianGuest).toMatch(/^kubevirt-ts\.local\/debian-guest:/);
    await core.createNamespacedSecret({ namespace, body: cloudInitSecret });
    await core.createNamespacedConfigMap({ namespace, body: appConfig });
    await core.createNamespacedSecret({ namespace, body: sshKeySecret });
    await core.createNamespacedSecret({ namespace, body: agentKeySecret(agentKeys[0] ?? "") });
    await core.createNamespacedSecret({ namespace, body: passwordsSecret });
    await createVm(namespace, vm);
    expect(JSON.stringify(await get("virtualmachines", "debian"))).not.toContain(password);
    await expect
      .poll(async () => (await get("virtualmachineinstances", "debian"))?.status?.phase, boot)
      .toBe("Running");
    await expect
      .poll(() => serialLog(namespace, "debian").catch(() => ""), boot)
      .toMatch(/Debian GNU\/Linux 12 \S+ ttyS0[\s\S]*login: /);
    const log = await serialLog(namespace, "debian");
    expect(log).toContain("Linux version");
    expect(log).toMatch(/Cloud-init v\. [\d.]+ running/);
    // As the instancetype and preference expand it, from the copies the VM captured.
    const domain = (
      (await get("virtualmachineinstances", "debian")) as unknown as {
        spec: { domain: { memory: { guest: string }; firmware: { bootloader: unknown } } };
      }
    ).spec.domain;
    expect(domain.memory.guest).toBe("2Gi");
    expect(domain.firmware.bootloader).toEqual({ efi: { secureBoot: false } });
  });

  it(
    "serves its serial console and VNC through the Kubernetes API server to an " +
      "editor's token, as virtctl reaches them",
    async () => {
      const token = await editorToken(namespace);
      // The guest waits at its login prompt: a carriage return has getty ask again.
      const serial = await openThroughApiServer("console", token);
      serial.ws.send(Buffer.from("\r"));
      await expect
        .poll(() => serial.received().toString("utf8"), { timeout: 60_000, interval: 500 })
        .toMatch(/login: /);
      serial.ws.close();
      // QEMU's VNC server speaks first: the RFB protocol version.
      const vnc = await openThroughApiServer("vnc", token);
      await expect
        .poll(() => vnc.received().toString("latin1"), { timeout: 30_000, interval: 200 })
        .toContain("RFB 003.008");
      vnc.ws.close();
    },
  );

  it(
    "lets the cloud-init user log in on the serial console and run commands that reach " +
      "the cluster from the guest, and reports its OS",
    async () => {
      const shell = await serialLogin(namespace, "debian", "tester", password, boot);
      const { spec } = await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
      const output = await shell.run(
        `echo "whoami=$(whoami) sum=$((40+2)) firmware=$(test -d /sys/firmware/efi && echo efi || echo bios) ` +
          `tpm=$(ls /sys/class/tpm | head -n 1)"; ip -4 -o addr show scope global; timeout 10 bash -c 'exec ` +
          `3<>/dev/tcp/${spec?.clusterIP ?? ""}/443' && echo "reached=k8s-$((6*7))"; ` +
          `echo "short=$(getent hosts kubernetes.default | cut -d' ' -f1)"; echo "end=$((40+3))"`,
        "end=43",
      );
      expect(output).toContain("whoami=tester sum=42 firmware=efi tpm=tpm0");
      expect(output).toContain("reached=k8s-42");
      // Masquerade: the guest's own address is the second of the launcher's private guest network, behind the pod's.
      expect(output).toMatch(/inet 198\.19\.254\.2\/24/);
      // DNS as in a pod: the pod's search path came by DHCP, so a short Service name resolves in the guest.
      expect(output).toContain(`short=${spec?.clusterIP ?? ""}`);
      shell.close();

      // The guest agent reports the OS.
      await expect
        .poll(
          async () =>
            (
              (await get("virtualmachineinstances", "debian"))?.status?.guestOSInfo as
                { prettyName?: string } | undefined
            )?.prettyName,
          boot,
        )
        .toBe("Debian GNU/Linux 12 (bookworm)");
      const vmi = await get("virtualmachineinstances", "debian");
      expect(
        (vmi?.status?.conditions as { type: string; status: string }[]).find((c) => c.type === "AgentConnected")
          ?.status,
      ).toBe("True");
      const [pod] = await launcherPods();
      expect((vmi?.status?.interfaces as { ipAddress: string }[])[0]?.ipAddress).toBe(pod?.status?.podIP);
      expect(pod?.spec?.volumes).toContainEqual(
        expect.objectContaining({ secret: expect.objectContaining({ secretName: "debian-cloud-init" }) as unknown }),
      );
    },
  );

  it(
    "forwards a port to the guest's sshd through the Kubernetes API server, as " +
      "virtctl port-forward and virtctl ssh do",
    async () => {
      const token = await editorToken(namespace);
      /** The first bytes the guest sends on its port 22 through a port forward, or what ended the session first. */
      const banner = async (path: `portforward/${string}`, resource?: string) => {
        const { ws, received } = await openThroughApiServer(path, token, resource);
        const closed = new Promise<string>((resolve) =>
          ws.once("close", (code, reason) => {
            resolve(`closed ${String(code)} ${reason.toString()}`);
          }),
        );
        const first = new Promise<string>((resolve) =>
          ws.once("message", () => {
            resolve(received().toString("latin1"));
          }),
        );
        const answer = await Promise.race([
          first,
          closed,
          new Promise<string>((resolve) =>
            setTimeout(() => {
              resolve("nothing within 20 s");
            }, 20_000),
          ),
        ]);
        ws.close();
        return answer;
      };
      // sshd may still be making its host keys after the login prompt: until it listens, the guest refuses and the
      // session closes.
      await expect.poll(() => banner("portforward/22/tcp"), boot).toMatch(/^SSH-2\.0-OpenSSH_/);
      // Through the VM, with the protocol left to its default (tcp), as virtctl port-forward vm/debian does.
      expect(await banner("portforward/22", "virtualmachines")).toMatch(/^SSH-2\.0-OpenSSH_/);
    },
  );

  it(
    "takes connections to every port on its pod's address when its interface lists none (sshd, a web server " +
      "the guest starts), answers a ping there itself, and is reached through a Service, as virtctl expose makes it",
    async () => {
      /** The first line a TCP server sends, or what ended the connection first. */
      const firstLine = (host: string, port: number, send = "") =>
        new Promise<string>((resolve) => {
          const socket = connect({ host, port });
          let text = "";
          const done = (what: string) => {
            socket.destroy();
            resolve(what);
          };
          socket.setTimeout(20_000, () => {
            done(`nothing within 20 s: ${text}`);
          });
          socket.on("connect", () => {
            if (send) socket.write(send);
          });
          socket.on("data", (data: Buffer) => {
            text += data.toString("latin1");
            if (text.includes("\n")) done(text);
          });
          socket.on("error", (error) => {
            done(`error: ${error.message}`);
          });
          socket.on("close", () => {
            done(`closed: ${text}`);
          });
        });
      const [pod] = await launcherPods();
      // The launcher answers the guest's DHCP on port 67 as its unprivileged user.
      expect(pod?.spec?.securityContext?.sysctls).toEqual([
        { name: "net.ipv4.ip_unprivileged_port_start", value: "0" },
      ]);
      const podIP = pod?.status?.podIP ?? "";
      await expect.poll(() => firstLine(podIP, 22), boot).toMatch(/^SSH-2\.0-OpenSSH_/);
      const shell = await serialLogin(namespace, "debian", "tester", password, boot);
      await shell.run(
        "(setsid python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 &); echo web=$((6*7))",
        "web=42",
      );
      shell.close();
      await expect
        .poll(() => firstLine(podIP, 8080, "GET / HTTP/1.0\r\n\r\n"), { timeout: 60_000, interval: 1_000 })
        .toMatch(/^HTTP\/1\.0 200 OK/);
      // ICMP echo reaches the guest, which answers; paused, it answers nothing (the pod does not answer for it).
      const ping = () =>
        promisify(execFile)("busybox", ["ping", "-c", "1", "-W", "3", podIP]).then(
          () => "answered",
          () => "silent",
        );
      expect(await ping()).toBe("answered");
      const vmiPath = (sub: string) =>
        `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/debian/${sub}`;
      const options = join(await mkdtemp(join(tmpdir(), "options-")), "options.json");
      await writeFile(options, "{}");
      await kubectl("replace", "--raw", vmiPath("pause"), "-f", options);
      try {
        await expect.poll(ping, { timeout: 30_000, interval: 500 }).toBe("silent");
      } finally {
        await kubectl("replace", "--raw", vmiPath("unpause"), "-f", options);
      }
      await expect.poll(ping, { timeout: 30_000, interval: 500 }).toBe("answered");
      // What virtctl expose does: a Service selecting the VM's launcher pod, to the guest's port.
      const service = await core.createNamespacedService({
        namespace,
        body: {
          metadata: { name: "debian-ssh" },
          spec: {
            selector: { "vm.kubevirt.io/name": "debian" },
            ports: [{ name: "ssh", port: 2222, targetPort: 22 }],
          },
        },
      });
      const clusterIP = service.spec?.clusterIP ?? "";
      await expect
        .poll(() => firstLine(clusterIP, 2222), { timeout: 60_000, interval: 1_000 })
        .toMatch(/^SSH-2\.0-OpenSSH_/);
    },
  );

  it(
    "is Ready while its exec readiness probe passes in the guest, and leaves its Service's " +
      "endpoints while it fails; its agent answers the liveness probe",
    async () => {
      const ready = async () =>
        (
          (await get("virtualmachineinstances", "debian"))?.status?.conditions as
            { type: string; status: string; reason?: string }[] | undefined
        )?.find((c) => c.type === "Ready");
      const endpointReady = async () => {
        const slices = await discovery.listNamespacedEndpointSlice({
          namespace,
          labelSelector: "kubernetes.io/service-name=debian-ssh",
        });
        return slices.items
          .flatMap((s): V1Endpoint[] => (s.endpoints as V1Endpoint[] | null | undefined) ?? [])
          .map((e) => e.conditions?.ready);
      };
      await expect.poll(ready, boot).toMatchObject({ status: "True" });
      await expect.poll(endpointReady, { timeout: 60_000, interval: 1_000 }).toEqual([true]);
      // The probe runs `test ! -e /tmp/unready` through the agent: the logged-in user makes it fail, then pass again.
      const { ws, received } = await openConsole(namespace, "debian", "console");
      ws.send(Buffer.from("touch /tmp/unready && echo un''ready-made\r"));
      await expect
        .poll(() => received().toString("utf8"), { timeout: 60_000, interval: 500 })
        .toContain("unready-made");
      await expect
        .poll(ready, { timeout: 60_000, interval: 1_000 })
        .toMatchObject({ status: "False", reason: "GuestNotReady" });
      await expect.poll(endpointReady, { timeout: 60_000, interval: 1_000 }).toEqual([false]);
      ws.send(Buffer.from("rm /tmp/unready && echo ready-''again\r"));
      await expect.poll(() => received().toString("utf8"), { timeout: 60_000, interval: 500 }).toContain("ready-again");
      ws.close();
      await expect.poll(ready, { timeout: 60_000, interval: 1_000 }).toMatchObject({ status: "True" });
      await expect.poll(endpointReady, { timeout: 60_000, interval: 1_000 }).toEqual([true]);
      // The liveness probe's check, asked of the launcher as the kubelet asks it: the guest agent answers its ping.
      const [pod] = await launcherPods();
      const liveness = await fetch(`http://${pod?.status?.podIP ?? ""}:9102/probes/liveness`);
      expect(await liveness.json()).toEqual({ status: "ok" });
      expect(pod?.status?.containerStatuses?.find((c) => c.name === "compute")?.restartCount).toBe(0);
    },
  );

  it("presents a ConfigMap and the downward API to its guest as labelled disks", async () => {
    const { ws, received } = await openConsole(namespace, "debian", "console");
    const before = received().length;
    // cloud-init mounts them by their labels late in the boot; the command is asked again until it has.
    await expect
      .poll(
        () => {
          ws.send(
            Buffer.from(
              'echo "greeting=$(cat /mnt/app-config/greeting 2>/dev/null) vm-label=$(grep -c ' +
                '\'^vm.kubevirt.io/name=\\"debian\\"\' /mnt/meta/labels 2>/dev/null)"\r',
            ),
          );
          return received().subarray(before).toString("utf8");
        },
        { timeout: 120_000, interval: 3_000 },
      )
      .toContain("greeting=hello from a ConfigMap vm-label=1");
    ws.close();
  });

  it(
    "lets its default user in over SSH with the public key of its access " + "credentials, which cloud-init gave it",
    async () => {
      const [pod] = await launcherPods();
      const login = () =>
        promisify(execFile)("ssh", [
          "-i",
          sshKey,
          "-o",
          "BatchMode=yes",
          "-o",
          "StrictHostKeyChecking=no",
          "-o",
          "UserKnownHostsFile=/dev/null",
          "-o",
          "ConnectTimeout=20",
          `debian@${pod?.status?.podIP ?? ""}`,
          "echo key-login-$((6*7))",
        ]).then(
          ({ stdout }) => stdout.trim(),
          (error: unknown) => `refused: ${String((error as { stderr?: string }).stderr ?? error)}`,
        );
      await expect.poll(login, { timeout: 120_000, interval: 3_000 }).toBe("key-login-42");
    },
  );

  it(
    "gives a user SSH keys through its guest agent, follows a change of the " +
      "key's Secret, and says so in its status",
    async () => {
      const [pod] = await launcherPods();
      const login = (key: string) => () =>
        promisify(execFile)("ssh", [
          "-i",
          key,
          "-o",
          "BatchMode=yes",
          "-o",
          "StrictHostKeyChecking=no",
          "-o",
          "UserKnownHostsFile=/dev/null",
          "-o",
          "ConnectTimeout=20",
          `tester@${pod?.status?.podIP ?? ""}`,
          "echo agent-key-$((6*7))",
        ]).then(
          ({ stdout }) => stdout.trim(),
          (error: unknown) => `refused: ${String((error as { stderr?: string }).stderr ?? error)}`,
        );
      const synchronized = async () =>
        (
          (await get("virtualmachineinstances", "debian"))?.status?.conditions as {
            type: string;
            status: string;
            reason?: string;
          }[]
        ).find((c) => c.type === "AccessCredentialsSynchronized");
      await expect.poll(synchronized, boot).toMatchObject({ status: "True", reason: "AccessCredentialsSyncSuccess" });
      await expect.poll(login(agentKeys[0] ?? ""), { timeout: 120_000, interval: 3_000 }).toBe("agent-key-42");

      // The key is rotated in its Secret: the kubelet updates the mounted copy, and the agent swaps the keys.
      await core.replaceNamespacedSecret({
        namespace,
        name: "debian-agent-key",
        body: agentKeySecret(agentKeys[1] ?? ""),
      });
      await expect.poll(login(agentKeys[1] ?? ""), { timeout: 240_000, interval: 5_000 }).toBe("agent-key-42");
      expect(await login(agentKeys[0] ?? "")()).toMatch(/^refused: [\s\S]*Permission denied \(publickey/);
    },
  );

  it("gives a user the password of its access credentials' Secret through its guest agent", async () => {
    const [pod] = await launcherPods();
    // ssh asks this program for the password (SSH_ASKPASS_REQUIRE=force): no terminal is needed.
    const askpass = join(sshKeyDir, "askpass");
    writeFileSync(askpass, `#!/bin/sh\necho '${agentPassword}'\n`, { mode: 0o700 });
    const login = () =>
      promisify(execFile)(
        "ssh",
        [
          "-o",
          "PreferredAuthentications=password",
          "-o",
          "PubkeyAuthentication=no",
          "-o",
          "NumberOfPasswordPrompts=1",
          "-o",
          "StrictHostKeyChecking=no",
          "-o",
          "UserKnownHostsFile=/dev/null",
          "-o",
          "ConnectTimeout=20",
          `debian@${pod?.status?.podIP ?? ""}`,
          "echo password-login-$((6*7))",
        ],
        { env: environmentWith({ SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: "force" }) },
      ).then(
        ({ stdout }) => stdout.trim(),
        (error: unknown) => `refused: ${String((error as { stderr?: string }).stderr ?? error)}`,
      );
    await expect.poll(login, { timeout: 120_000, interval: 3_000 }).toBe("password-login-42");
  });

  it("tells what its guest agent knows through KubeVirt's guestosinfo, userlist and filesystemlist", async () => {
    const read = async (query: string) =>
      JSON.parse(
        await kubectl(
          "get",
          "--raw",
          `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/debian/${query}`,
        ),
      ) as Record<string, unknown>;
    const info = await read("guestosinfo");
    expect(info).toMatchObject({
      hostname: "debian",
      os: { id: "debian", prettyName: "Debian GNU/Linux 12 (bookworm)", machine: "x86_64" },
    });
    expect(info.guestAgentVersion).toMatch(/^\d+\.\d+/);
    expect(info.supportedCommands).toContainEqual({ name: "guest-get-users", enabled: true });
    // The cloud-init user is still logged in on the serial console, from the test before.
    const users = await read("userlist");
    expect(users.items).toContainEqual(
      expect.objectContaining({ userName: "tester", loginTime: expect.any(Number) as unknown }),
    );
    const filesystems = (await read("filesystemlist")) as {
      items: { mountPoint: string; fileSystemType: string; totalBytes?: number }[];
    };
    const root = filesystems.items.find((fs) => fs.mountPoint === "/");
    expect(root?.fileSystemType).toBe("ext4");
    expect(root?.totalBytes).toBeGreaterThan(100 * 1024 * 1024);
  });

  it(
    "freezes and thaws its file systems through KubeVirt's freeze and " + "unfreeze, and says so in its status",
    async () => {
      const body = join(await mkdtemp(join(tmpdir(), "freeze-")), "body.json");
      await writeFile(body, JSON.stringify({ unfreezeTimeout: "5m" }));
      const put = (subresource: string) =>
        kubectl(
          "replace",
          "--raw",
          `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/debian/${subresource}`,
          "-f",
          body,
        );
      const freezeStatus = async () => (await get("virtualmachineinstances", "debian"))?.status?.fsFreezeStatus;
      await put("freeze");
      await expect.poll(freezeStatus, { timeout: 60_000, interval: 1_000 }).toBe("frozen");
      await put("unfreeze");
      await expect.poll(freezeStatus, { timeout: 60_000, interval: 1_000 }).toBeUndefined();
    },
  );

  it("shows its display as a PNG screenshot through KubeVirt's vnc/screenshot, to the admin", async () => {
    const path =
      `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}` + "/virtualmachineinstances/debian/vnc/screenshot";
    // kubectl prints the body's bytes; read as text, the PNG's signature and header chunk are still there to see.
    const png = await kubectl("get", "--raw", path);
    expect(png.slice(1, 8)).toBe("PNG\r\n\u001a\n");
    expect(png.slice(12, 16)).toBe("IHDR");
    await expect(kubectl("get", "--raw", `${path}?moveCursor=true`)).rejects.toThrow(
      /moveCursor=true is not supported/,
    );
  });

  it("is deleted with its guest, which powers off through ACPI, and its launcher pod", async () => {
    // Watch the serial console through the deletion: a clean shutdown ends with systemd's power-off and the kernel's
    // last line.
    const { ws, received } = await openConsole(namespace, "debian", "console");
    const closed = once(ws, "close");
    // The session reaches the guest once it answers (a prompt again): only then may the deletion begin, or the
    // handler, seeing the launcher pod going, would rightly refuse a session not yet connected.
    ws.send(Buffer.from("\r"));
    await expect.poll(() => received().length, { timeout: 60_000, interval: 500 }).toBeGreaterThan(0);
    await custom.deleteNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      name: "debian",
    });
    await closed;
    const output = received().toString("utf8");
    expect(output).toMatch(/System Power Off|Powering off/);
    expect(output).toContain("reboot: Power down");
    await expect.poll(() => get("virtualmachineinstances", "debian"), boot).toBeUndefined();
    await expect.poll(async () => (await launcherPods()).length, boot).toBe(0);
  });
});
