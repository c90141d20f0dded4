import type { PersistentVolumeClaim, Pod } from "@kubevirt-ts/kube";
import type { DataVolume, DataVolumeSpec } from "@kubevirt-ts/kubevirt-api";
import { deriveUploadKey } from "@kubevirt-ts/runtime";
import { describe, expect, it } from "vitest";
import {
  claimCopyPod,
  claimCopyPodName,
  claimNode,
  dataVolumeClaim,
  importDiskBytes,
  importerPod,
  importerPodMismatch,
  uploadKeySecret,
} from "./importer-pod.ts";

const dv = (spec: DataVolumeSpec): DataVolume => ({
  apiVersion: "cdi.kubevirt.io/v1beta1",
  kind: "DataVolume",
  metadata: { name: "root", namespace: "ns", uid: "dv-uid" },
  spec,
});
const config = {
  importerImage: "kubevirt-ts.local/importer:1",
  imagePullPolicy: "IfNotPresent" as const,
  uploadMasterKey: Buffer.alloc(32, 5),
};
const GI = 1024 ** 3;
const envOf = (spec: DataVolumeSpec) =>
  Object.fromEntries(
    (importerPod(dv(spec), GI, config).spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]),
  );

const MI = 2 ** 20;

describe("the claim of a DataVolume", () => {
  it(
    "makes the claim CDI's way: named and owned as the DataVolume, its access modes, class and " +
      "mode, the storage API's size grown by the overhead",
    () => {
      const claim = dataVolumeClaim(
        dv({
          source: { blank: {} },
          storage: {
            accessModes: ["ReadWriteMany"],
            storageClassName: "fast",
            volumeMode: "Filesystem",
            resources: { requests: { storage: "1Gi" } },
          },
        }),
        undefined,
      );
      expect(claim?.metadata).toMatchObject({
        name: "root",
        namespace: "ns",
        ownerReferences: [{ kind: "DataVolume", name: "root", uid: "dv-uid", controller: true }],
      });
      expect(claim?.spec).toEqual({
        accessModes: ["ReadWriteMany"],
        volumeMode: "Filesystem",
        storageClassName: "fast",
        resources: { requests: { storage: String(Math.ceil(GI / 0.945)) } },
      });
      expect(
        importDiskBytes(
          dv({ source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } }),
          undefined,
        ),
      ).toBe(GI);
    },
  );

  it("takes a pvc request as the claim's size, the disk being that less the overhead; ReadWriteOnce by default", () => {
    const spec: DataVolumeSpec = {
      source: { blank: {} },
      pvc: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: "slow",
        volumeMode: "Filesystem",
        resources: { requests: { storage: "1Gi" } },
      },
    };
    expect(dataVolumeClaim(dv(spec), undefined)?.spec).toEqual({
      accessModes: ["ReadWriteOnce"],
      volumeMode: "Filesystem",
      storageClassName: "slow",
      resources: { requests: { storage: String(GI) } },
    });
    expect(importDiskBytes(dv(spec), undefined)).toBe(Math.floor((GI * 0.945) / 2 ** 20) * 2 ** 20);
    expect(
      dataVolumeClaim(
        dv({ source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } }),
        undefined,
      )?.spec?.accessModes,
    ).toEqual(["ReadWriteOnce"]);
  });

  it("lets a clone into a claim asked for by size take a disk as large as that claim, as a launcher makes one", () => {
    const source: PersistentVolumeClaim = {
      metadata: { name: "golden", namespace: "ns" },
      spec: { resources: { requests: { storage: "128Mi" } } },
    };
    const pvc = { resources: { requests: { storage: "128Mi" } } };
    expect(importDiskBytes(dv({ source: { pvc: { namespace: "ns", name: "golden" } }, pvc }), source)).toBe(128 * MI);
    // Not a clone: the claim less the overhead, as CDI sizes it.
    expect(importDiskBytes(dv({ source: { blank: {} }, pvc }), undefined)).toBe(Math.floor(128 * 0.945) * MI);
    // A size asked for the disk itself (storage) is kept.
    const storage = { resources: { requests: { storage: "64Mi" } } };
    expect(importDiskBytes(dv({ source: { pvc: { namespace: "ns", name: "golden" } }, storage }), source)).toBe(
      64 * MI,
    );
  });

  it("sizes a clone that names no size as its source claim", () => {
    const source: PersistentVolumeClaim = {
      metadata: { name: "golden", namespace: "ns" },
      spec: { resources: { requests: { storage: "2Gi" } } },
    };
    const clone = dv({ source: { pvc: { namespace: "ns", name: "golden" } }, storage: {} });
    expect(dataVolumeClaim(clone, source)?.spec?.resources?.requests?.storage).toBe(String(2 * GI));
    expect(dataVolumeClaim(clone, undefined)).toBeUndefined();
  });
});

describe("the importer pod", () => {
  it("passes the http source's URL, headers and secret to the importer", () => {
    expect(
      envOf({
        source: {
          http: { url: "https://images.example/disk.qcow2", extraHeaders: ["X-Token: a"], secretRef: "creds" },
        },
        storage: {},
      }),
    ).toMatchObject({
      IMPORTER_SOURCE: "http",
      IMPORTER_ENDPOINT: "https://images.example/disk.qcow2",
      IMPORTER_EXTRA_HEADERS: JSON.stringify(["X-Token: a"]),
      IMPORTER_ACCESS_KEY_ID: { secretKeyRef: { name: "creds", key: "accessKeyId" } },
      IMPORTER_SECRET_KEY: { secretKeyRef: { name: "creds", key: "secretKey" } },
      IMPORTER_DISK_BYTES: String(GI),
    });
  });

  it("mounts the http source's certConfigMap and each secretExtraHeaders Secret read-only for the importer", () => {
    const pod = importerPod(
      dv({
        source: {
          http: {
            url: "https://virt-export-e.ns.svc/volumes/root/disk.img.gz",
            certConfigMap: "export-ca-cm-e",
            secretExtraHeaders: ["header-secret-e", "more"],
          },
        },
        storage: {},
      }),
      GI,
      config,
    );
    expect(pod.spec?.volumes).toEqual(
      expect.arrayContaining([
        { name: "cert-config", configMap: { name: "export-ca-cm-e" } },
        { name: "extra-headers-0", secret: { secretName: "header-secret-e" } },
        { name: "extra-headers-1", secret: { secretName: "more" } },
      ]),
    );
    const container = pod.spec?.containers[0];
    expect(container?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: "cert-config", mountPath: "/certs", readOnly: true },
        { name: "extra-headers-0", mountPath: "/extraheaders/0", readOnly: true },
        { name: "extra-headers-1", mountPath: "/extraheaders/1", readOnly: true },
      ]),
    );
    expect(container?.env).toEqual(
      expect.arrayContaining([
        { name: "IMPORTER_CERT_DIR", value: "/certs" },
        { name: "IMPORTER_SECRET_HEADERS_DIR", value: "/extraheaders" },
      ]),
    );
  });

  it("pulls a registry source's image in the importer pod, whose copier takes its disk out", () => {
    const pod = importerPod(
      dv({
        source: { registry: { url: "docker://kubevirt-ts.local/debian-guest:12", pullMethod: "pod" } },
        storage: {},
      }),
      GI,
      config,
    );
    expect(pod.spec?.initContainers?.map((c) => c.image)).toEqual([
      "kubevirt-ts.local/importer:1",
      "kubevirt-ts.local/debian-guest:12",
    ]);
    expect(pod.spec?.initContainers?.[1]?.command).toEqual([
      "/var/run/kubevirt-ts/importer-tools/kubevirt-ts-disk-copy",
      "/disk",
      "/source",
    ]);
    expect(envOf({ source: { registry: { url: "docker://x" } }, storage: {} }).IMPORTER_SOURCE).toBe("registry");
  });

  it("clones a claim of the namespace by mounting it read-only", () => {
    const pod = importerPod(dv({ source: { pvc: { namespace: "ns", name: "golden" } }, storage: {} }), GI, config);
    expect(pod.spec?.volumes).toContainEqual({
      name: "source",
      persistentVolumeClaim: { claimName: "golden", readOnly: true },
    });
    expect(pod.spec?.containers[0]?.volumeMounts).toContainEqual({
      name: "source",
      mountPath: "/source",
      readOnly: true,
    });
  });

  it("makes a blank disk, as the launcher's user, restarted by the kubelet when it fails", () => {
    const pod = importerPod(dv({ source: { blank: {} }, storage: {} }), GI, config);
    expect(pod.spec?.affinity).toBeUndefined();
    expect(pod.metadata.name).toBe("importer-root");
    expect(pod.spec?.restartPolicy).toBe("OnFailure");
    expect(pod.spec?.securityContext).toMatchObject({ runAsUser: 107, fsGroup: 107, runAsNonRoot: true });
    expect(pod.spec?.volumes).toEqual([{ name: "target", persistentVolumeClaim: { claimName: "root" } }]);
    expect(envOf({ source: { blank: {} }, storage: {} }).IMPORTER_SOURCE).toBe("blank");
  });

  it(
    "serves an upload from cdi-upload-<claim> with its own key, ready once it " +
      "listens, its claim marked as an upload target",
    () => {
      const upload = dv({ source: { upload: {} }, storage: { resources: { requests: { storage: "1Gi" } } } });
      expect(dataVolumeClaim(upload, undefined)?.metadata.annotations).toMatchObject({
        "cdi.kubevirt.io/storage.upload.target": "",
      });
      const pod = importerPod(upload, GI, config);
      expect(pod.metadata.name).toBe("cdi-upload-root");
      const container = pod.spec?.containers[0];
      expect(container?.env).toContainEqual({ name: "IMPORTER_SOURCE", value: "upload" });
      expect(container?.readinessProbe).toMatchObject({ tcpSocket: { port: 8444 } });
    },
  );

  it(
    "keeps an upload's key, derived from the master key and the DataVolume's uid, in a Secret the " +
      "DataVolume owns, which the pod names by secretKeyRef: the pod a viewer reads holds no key",
    () => {
      const upload = dv({ source: { upload: {} }, storage: { resources: { requests: { storage: "1Gi" } } } });
      const secret = uploadKeySecret(upload, config.uploadMasterKey);
      const key = deriveUploadKey(config.uploadMasterKey, "dv-uid");
      expect(secret.metadata).toMatchObject({
        name: "cdi-upload-root",
        namespace: "ns",
        ownerReferences: [{ kind: "DataVolume", name: "root", uid: "dv-uid", controller: true }],
      });
      expect(secret.data).toEqual({ uploadKey: Buffer.from(key).toString("base64") });
      // Another DataVolume of the same name (deleted and made again) has another uid, and another key.
      expect(
        uploadKeySecret({ ...upload, metadata: { ...upload.metadata, uid: "dv-uid-2" } }, config.uploadMasterKey).data,
      ).not.toEqual(secret.data);
      const pod = importerPod(upload, GI, config);
      expect(pod.spec?.containers[0]?.env).toContainEqual({
        name: "IMPORTER_UPLOAD_KEY",
        valueFrom: { secretKeyRef: { name: "cdi-upload-root", key: "uploadKey" } },
      });
      expect(JSON.stringify(pod)).not.toContain(key);
      expect(pod.metadata.annotations).toBeUndefined();
    },
  );
});

describe("the importer pod of a VM's DataVolume on local storage", () => {
  it(
    "runs on the node of the VM's other claims, when one is bound, so that its " +
      "claim is bound where the VM can mount both",
    () => {
      const pod = importerPod(dv({ source: { blank: {} }, storage: {} }), GI, config, "node-2");
      expect(
        pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
      ).toEqual([{ matchFields: [{ key: "metadata.name", operator: "In", values: ["node-2"] }] }]);
      expect(
        claimNode({ metadata: { name: "iso", annotations: { "volume.kubernetes.io/selected-node": "node-2" } } }),
      ).toBe("node-2");
      expect(claimNode({ metadata: { name: "iso" } })).toBeUndefined();
    },
  );
});

describe("whether a pod in the importer's place is the one the controller made", () => {
  const http = dv({ source: { http: { url: "https://images.example/disk.qcow2" } }, storage: {} });
  const expected = importerPod(http, GI, config);
  /**
   * The pod as the API server hands it back: its defaults filled in, its status, and the tag of the image of its time.
   */
  const stored = (change: (pod: Pod) => void = () => undefined): Pod => {
    const pod = structuredClone(expected);
    pod.metadata.uid = "pod-uid";
    const spec = pod.spec ?? { containers: [] };
    spec.dnsPolicy = "ClusterFirst";
    spec.serviceAccountName = "default";
    for (const c of spec.containers) Object.assign(c, { terminationMessagePath: "/dev/termination-log" });
    change(pod);
    return pod;
  };
  const container = (pod: Pod) => {
    const first = pod.spec?.containers[0];
    if (!first) throw new Error("the importer pod has no container");
    return first;
  };

  it(
    "is the controller's as the API server keeps it, made before an upgrade of the " +
      "importer image, or for a disk size that moved since",
    () => {
      expect(importerPodMismatch(stored(), expected)).toBeUndefined();
      expect(
        importerPodMismatch(
          stored((p) => {
            container(p).image = "kubevirt-ts.local/importer:0";
          }),
          expected,
        ),
      ).toBeUndefined();
      expect(importerPodMismatch(stored(), importerPod(http, 2 * GI, config))).toBeUndefined();
    },
  );

  it("is not the controller's when it runs other code: another image, command, arguments or environment", () => {
    expect(
      importerPodMismatch(
        stored((p) => {
          container(p).image = "attacker.example/streams-forever:1";
        }),
        expected,
      ),
    ).toBe("its container importer is not the importer's (image, command, environment or mounts differ)");
    expect(
      importerPodMismatch(
        stored((p) => {
          container(p).command = ["sh", "-c", "yes | nc -l -p 8443"];
        }),
        expected,
      ),
    ).toMatch(/container importer is not the importer's/);
    expect(
      importerPodMismatch(
        stored((p) => {
          container(p).args = ["--inspect"];
        }),
        expected,
      ),
    ).toMatch(/container importer is not the importer's/);
    expect(
      importerPodMismatch(
        stored((p) => {
          container(p).env?.push({ name: "NODE_OPTIONS", value: "--require /tmp/x.js" });
        }),
        expected,
      ),
    ).toMatch(/container importer is not the importer's/);
    expect(
      importerPodMismatch(
        stored((p) => {
          container(p).volumeMounts?.push({ name: "target", mountPath: "/tmp" });
        }),
        expected,
      ),
    ).toMatch(/container importer is not the importer's/);
  });

  it(
    "is not the controller's with a container added, an ephemeral container, a " + "shared namespace or other volumes",
    () => {
      expect(
        importerPodMismatch(
          stored((p) => {
            p.spec?.containers.push({ name: "sidecar", image: "attacker.example/streams-forever:1" });
          }),
          expected,
        ),
      ).toBe("its containers are [importer, sidecar], not [importer]");
      expect(
        importerPodMismatch(
          stored((p) => {
            Object.assign(p.spec ?? {}, { ephemeralContainers: [{ name: "debugger", image: "busybox" }] });
          }),
          expected,
        ),
      ).toBe("an ephemeral container was added to it");
      expect(
        importerPodMismatch(
          stored((p) => {
            Object.assign(p.spec ?? {}, { shareProcessNamespace: true });
          }),
          expected,
        ),
      ).toBe("it shares a process or host namespace");
      expect(
        importerPodMismatch(
          stored((p) => {
            Object.assign(p.spec ?? {}, { hostNetwork: true });
          }),
          expected,
        ),
      ).toBe("it shares a process or host namespace");
      expect(
        importerPodMismatch(
          stored((p) => {
            p.spec?.volumes?.splice(0, 1, { name: "target", persistentVolumeClaim: { claimName: "someone-elses" } });
          }),
          expected,
        ),
      ).toBe("its volumes are not the importer's");
    },
  );

  it(
    "is not the controller's when an upload pod takes its key from anywhere but the " +
      "DataVolume's Secret (a pod of the annotation days)",
    () => {
      const upload = dv({ source: { upload: {} }, storage: {} });
      const legacy = structuredClone(importerPod(upload, GI, config));
      const env = legacy.spec?.containers[0]?.env ?? [];
      env.splice(
        env.findIndex((e) => e.name === "IMPORTER_UPLOAD_KEY"),
        1,
        {
          name: "IMPORTER_UPLOAD_KEY",
          valueFrom: { fieldRef: { fieldPath: "metadata.annotations['kubevirt-ts.io/upload-key']" } },
        },
      );
      expect(importerPodMismatch(legacy, importerPod(upload, GI, config))).toMatch(
        /container importer is not the importer's/,
      );
      expect(importerPodMismatch(importerPod(upload, GI, config), importerPod(upload, GI, config))).toBeUndefined();
    },
  );
});

describe("a claim copy's pod", () => {
  const owner = {
    apiVersion: "snapshot.kubevirt.io/v1beta1",
    kind: "VirtualMachineSnapshotContent",
    name: "vmsnapshot-content-u",
    uid: "c-uid",
    controller: true as const,
    blockOwnerDeletion: true as const,
  };
  const copy = (inUse: boolean) =>
    claimCopyPod(
      { target: "vmsnapshot-u-volume-root", namespace: "ns", source: "root", diskBytes: GI, owner, node: "n2", inUse },
      config,
    );

  it("is the importer of a clone: the source read-only, on the source's node, owned by the snapshot content", () => {
    const pod = copy(true);
    expect(pod.metadata.name).toBe(claimCopyPodName("vmsnapshot-u-volume-root"));
    expect(pod.metadata.ownerReferences).toEqual([owner]);
    expect(pod.spec?.volumes).toEqual([
      { name: "target", persistentVolumeClaim: { claimName: "vmsnapshot-u-volume-root" } },
      { name: "source", persistentVolumeClaim: { claimName: "root", readOnly: true } },
    ]);
    expect(pod.spec?.containers[0]?.volumeMounts).toContainEqual({
      name: "source",
      mountPath: "/source",
      readOnly: true,
    });
    expect(JSON.stringify(pod.spec?.affinity)).toContain('"values":["n2"]');
    const env = Object.fromEntries((pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      IMPORTER_SOURCE: "pvc",
      IMPORTER_SOURCE_IN_USE: "true",
      IMPORTER_DISK_BYTES: String(GI),
    });
  });

  it("reads a disk at rest without forcing QEMU's lock, and is told apart from the one that would", () => {
    const env = Object.fromEntries((copy(false).spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.IMPORTER_SOURCE_IN_USE).toBe("false");
    expect(importerPodMismatch(copy(false), copy(true))).toMatch(/not the importer's/);
    expect(importerPodMismatch(copy(true), copy(true))).toBeUndefined();
  });
});
