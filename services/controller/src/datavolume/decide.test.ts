import type { PersistentVolumeClaim, Pod } from "@kubevirt-ts/kube";
import type { DataVolume } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { type DataVolumeObservation, decideDataVolume, deriveDataVolumeStatus } from "./decide.ts";

const now = new Date("2026-11-24T08:00:00Z");
const dv: DataVolume = {
  apiVersion: "cdi.kubevirt.io/v1beta1",
  kind: "DataVolume",
  metadata: { name: "root", namespace: "ns", uid: "dv-uid" },
  spec: { source: { http: { url: "http://x/disk.img" } }, storage: {} },
};
const claim = (annotations: Record<string, string> = {}, phase = "Bound"): PersistentVolumeClaim => ({
  metadata: { name: "root", annotations },
  status: { phase },
});
const pod = (status: Pod["status"]): Pod => ({ metadata: { name: "importer-root", uid: "pod-uid" }, status });
const observe = (o: Partial<DataVolumeObservation>): DataVolumeObservation => ({
  dv,
  claim: undefined,
  claimOwned: true,
  adoptionAllowed: false,
  pod: undefined,
  blocked: undefined,
  progress: undefined,
  now,
  ...o,
});

describe("decideDataVolume", () => {
  it("makes the claim, then the importer, marks the claim when the importer is done, then removes it", () => {
    expect(decideDataVolume(observe({}))).toEqual({ kind: "createClaim" });
    expect(decideDataVolume(observe({ claim: claim() }))).toEqual({ kind: "createPod" });
    expect(decideDataVolume(observe({ claim: claim(), pod: pod({ phase: "Running" }) }))).toEqual({ kind: "none" });
    expect(decideDataVolume(observe({ claim: claim(), pod: pod({ phase: "Succeeded" }) }))).toEqual({
      kind: "markSucceeded",
    });
    const done = claim({ "cdi.kubevirt.io/storage.pod.phase": "Succeeded" });
    expect(decideDataVolume(observe({ claim: done, pod: pod({ phase: "Succeeded" }) }))).toMatchObject({
      kind: "deletePod",
    });
    expect(decideDataVolume(observe({ claim: done }))).toEqual({ kind: "none" });
  });

  it("takes over a claim it did not make only when allowed, and waits while its source is missing", () => {
    expect(decideDataVolume(observe({ claim: claim(), claimOwned: false }))).toEqual({ kind: "none" });
    expect(decideDataVolume(observe({ claim: claim(), claimOwned: false, adoptionAllowed: true }))).toEqual({
      kind: "adoptClaim",
    });
    expect(decideDataVolume(observe({ blocked: "the source claim ns/golden does not exist" }))).toEqual({
      kind: "none",
    });
  });
});

describe("a pod in the importer's place that the controller did not make", () => {
  it(
    "is left alone (no importer made beside it, nothing marked from it) and named " +
      "on the Running condition with what to do",
    () => {
      const foreignPod = {
        name: "ns/importer-root",
        why: "its container importer is not the importer's (image, command, environment or mounts differ)",
      };
      expect(decideDataVolume(observe({ claim: claim(), foreignPod }))).toEqual({ kind: "none" });
      const running = deriveDataVolumeStatus(observe({ claim: claim(), foreignPod })).conditions?.find(
        (c) => c.type === "Running",
      );
      expect(running).toMatchObject({ status: "False", reason: "ImporterPodNotOurs" });
      expect(running?.message).toBe(
        "the pod ns/importer-root has the importer's name and owner but is not the importer the controller " +
          "made (its container importer is not the importer's (image, command, environment or mounts differ)); " +
          "nothing is read from it: delete it, and the controller makes its own",
      );
    },
  );
});

describe("deriveDataVolumeStatus", () => {
  it("goes through CDI's phases with the importer's progress", () => {
    expect(deriveDataVolumeStatus(observe({}))).toMatchObject({ phase: "Pending", progress: "N/A", claimName: "root" });
    expect(
      deriveDataVolumeStatus(observe({ claim: claim({}, "Pending"), pod: pod({ phase: "Pending" }) })),
    ).toMatchObject({ phase: "ImportScheduled" });
    const running = deriveDataVolumeStatus(
      observe({
        claim: claim(),
        pod: pod({
          phase: "Running",
          containerStatuses: [{ name: "importer", ready: true, restartCount: 0, image: "", imageID: "" }],
        }),
        progress: "45.12%",
      }),
    );
    expect(running).toMatchObject({ phase: "ImportInProgress", progress: "45.12%", restartCount: 0 });
    expect(running.conditions?.find((c) => c.type === "Running")?.status).toBe("True");
    const succeeded = deriveDataVolumeStatus(
      observe({ claim: claim({ "cdi.kubevirt.io/storage.pod.phase": "Succeeded" }) }),
    );
    expect(succeeded).toMatchObject({ phase: "Succeeded", progress: "100.0%" });
    expect(succeeded.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
  });

  it(
    "says why the importer keeps failing (its termination message) and how " +
      "often it was restarted, never Succeeded",
    () => {
      const failing = pod({
        phase: "Running",
        containerStatuses: [
          {
            name: "importer",
            ready: false,
            restartCount: 3,
            image: "",
            imageID: "",
            state: { waiting: { reason: "CrashLoopBackOff" } },
            lastState: {
              terminated: { exitCode: 1, message: "the http data source answered 404 Not Found for http://x/disk.img" },
            },
          },
        ],
      });
      const status = deriveDataVolumeStatus(observe({ claim: claim(), pod: failing }));
      expect(status).toMatchObject({ phase: "ImportInProgress", restartCount: 3 });
      expect(status.conditions?.find((c) => c.type === "Running")).toMatchObject({
        status: "False",
        reason: "Error",
        message: "the http data source answered 404 Not Found for http://x/disk.img",
      });
    },
  );

  it("reports an image that cannot be pulled as ImagePullFailed", () => {
    const pulling = pod({
      phase: "Pending",
      initContainerStatuses: [
        {
          name: "registry-disk",
          ready: false,
          restartCount: 0,
          image: "",
          imageID: "",
          state: { waiting: { reason: "ErrImagePull", message: "pull access denied" } },
        },
      ],
    });
    expect(
      deriveDataVolumeStatus(observe({ claim: claim(), pod: pulling })).conditions?.find((c) => c.type === "Running"),
    ).toMatchObject({ status: "False", reason: "ImagePullFailed", message: "pull access denied" });
  });

  it("names a clone's phases as CDI does", () => {
    const clone = { ...dv, spec: { source: { pvc: { namespace: "ns", name: "golden" } }, storage: {} } };
    expect(
      deriveDataVolumeStatus(observe({ dv: clone, claim: claim(), pod: pod({ phase: "Running" }) })),
    ).toMatchObject({ phase: "CloneInProgress" });
  });

  it(
    "takes an upload through UploadScheduled to UploadReady once its upload server is " +
      "ready, and says so on the claim as CDI does",
    () => {
      const upload: DataVolume = { ...dv, spec: { source: { upload: {} }, storage: {} } };
      const starting = pod({ phase: "Running", conditions: [{ type: "Ready", status: "False" }] });
      const ready = pod({ phase: "Running", conditions: [{ type: "Ready", status: "True" }] });
      expect(
        deriveDataVolumeStatus(observe({ dv: upload, claim: claim(), pod: pod({ phase: "Pending" }) })),
      ).toMatchObject({ phase: "UploadScheduled" });
      expect(deriveDataVolumeStatus(observe({ dv: upload, claim: claim(), pod: starting }))).toMatchObject({
        phase: "UploadScheduled",
      });
      expect(deriveDataVolumeStatus(observe({ dv: upload, claim: claim(), pod: ready }))).toMatchObject({
        phase: "UploadReady",
      });
      expect(decideDataVolume(observe({ dv: upload, claim: claim(), pod: ready }))).toEqual({
        kind: "annotateClaim",
        annotations: { "cdi.kubevirt.io/storage.pod.phase": "Running", "cdi.kubevirt.io/storage.pod.ready": "true" },
      });
      const annotated = claim({
        "cdi.kubevirt.io/storage.pod.phase": "Running",
        "cdi.kubevirt.io/storage.pod.ready": "true",
      });
      expect(decideDataVolume(observe({ dv: upload, claim: annotated, pod: ready }))).toEqual({ kind: "none" });
      expect(decideDataVolume(observe({ dv: upload, claim: annotated, pod: pod({ phase: "Succeeded" }) }))).toEqual({
        kind: "markSucceeded",
      });
    },
  );
});
