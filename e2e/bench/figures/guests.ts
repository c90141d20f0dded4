import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { custom, imageOf } from "../../cluster/cluster.ts";
import { openConsole, serialLog } from "../../cluster/console.ts";
import { tinyVm } from "../../manifests.ts";
import { VmiPhases, createNamespace, deleteNamespace, kubectl, waitFor } from "../cluster.ts";
import { type Row, distribution } from "../results.ts";
import { summarize } from "../stats.ts";
import { createVm } from "../workload.ts";

// Real guests: the Debian guest of examples/vm-debian.yaml to a login prompt
// on its serial console, and keystrokes echoed by the tiny guest's shell
// through the dashboard's console websocket (gateway → api → handler →
// launcher → guest and back).

const LOGIN = /Debian GNU\/Linux 12 \S+ ttyS0[\s\S]*login: /;

export async function debianFigure(): Promise<Row[]> {
  const namespace = await createNamespace("debian");
  const watch = await VmiPhases.start(namespace);
  try {
    await kubectl("create", "-n", namespace, "-f", join(REPO_ROOT, "examples/vm-debian.yaml"));
    const vm = (await custom.getNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      name: "debian",
    })) as { metadata: { creationTimestamp: string } };
    const created = Date.parse(vm.metadata.creationTimestamp);
    const deadline = created + 600_000;
    let loginAt: number | undefined;
    const running = await waitFor(() => watch.count(["Running"]) > 0, 600_000);
    if (running) {
      // The console shows what the guest prints from now on; the handler's serial log covers output from before, polled
      // as a fallback.
      const session = await openConsole(namespace, "debian", "console");
      await waitFor(
        async () => {
          if (LOGIN.test(session.received().toString("latin1"))) loginAt = Date.now();
          else if (LOGIN.test(await serialLog(namespace, "debian").catch(() => ""))) loginAt = Date.now();
          return loginAt !== undefined;
        },
        Math.max(0, deadline - Date.now()),
        200,
      );
      session.ws.close();
    }
    return [
      {
        id: "debian.login",
        figure:
          "Debian guest (examples/vm-debian.yaml, 1 vCPU, 1Gi, emulated): " +
          "create → login prompt on the serial console",
        unit: "s",
        values: { value: loginAt === undefined ? null : (loginAt - created) / 1000 },
        method:
          "VM creationTimestamp → the serial console websocket (or the handler's serial log, " +
          'polled) shows "Debian GNU/Linux 12 … ttyS0 … login:"',
        ...(loginAt === undefined
          ? { note: running ? "no login prompt within 600 s" : "not Running within 600 s" }
          : {}),
      },
    ];
  } finally {
    watch.stop();
    await deleteNamespace(namespace).catch(() => undefined);
  }
}

const KEYSTROKES = 500;

export async function consoleEchoFigure(): Promise<Row[]> {
  const namespace = await createNamespace("console");
  const watch = await VmiPhases.start(namespace);
  try {
    await createVm(namespace, tinyVm("tiny", imageOf("tiny-guest"), namespace));
    if (!(await waitFor(() => watch.count(["Running"]) > 0, 300_000)))
      throw new Error("the tiny guest's VMI is not Running after 300 s");
    const { ws, received } = await openConsole(namespace, "tiny", "console");
    try {
      // The guest's shell is up once a command typed there answers.
      let asked = 0;
      const ready = await waitFor(
        () => {
          if (received().toString("latin1").includes("bench-ready-42")) return true;
          if (Date.now() - asked > 3_000) {
            ws.send(Buffer.from("echo bench-ready-$((40+2))\n"));
            asked = Date.now();
          }
          return false;
        },
        180_000,
        50,
      );
      if (!ready) throw new Error("the tiny guest's shell did not answer on its console within 180 s");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const samples: number[] = [];
      for (let i = 0; i < KEYSTROKES; i++) {
        // A letter, then DEL to erase it: the shell echoes the letter, then backspace sequences, so the line never
        // grows.
        const key = i % 2 === 0 ? "x" : "\x7f";
        const from = received().length;
        const started = performance.now();
        ws.send(Buffer.from(key));
        const echoed = await waitFor(
          () => {
            const fresh = received().subarray(from);
            return key === "x" ? fresh.includes(0x78) : fresh.includes(0x08) || fresh.includes(0x1b);
          },
          5_000,
          0,
        );
        if (!echoed) throw new Error(`keystroke ${String(i)} (${JSON.stringify(key)}) was not echoed within 5 s`);
        samples.push(performance.now() - started);
      }
      return [
        {
          id: "console.echo",
          figure: `console keystroke echo round trip (tiny guest, ${String(KEYSTROKES)} keystrokes)`,
          unit: "ms",
          values: distribution(summarize(samples)),
          method:
            "websocket on the dashboard's address (gateway → api → handler → launcher → guest's tty and " +
            "back), as the admin user; one key at a time, time until its echo arrives",
        },
      ];
    } finally {
      ws.close();
    }
  } finally {
    watch.stop();
    await deleteNamespace(namespace).catch(() => undefined);
  }
}
