import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

// The local cluster's two dashboard users (cluster-up/users.yaml): an admin
// and a viewer, with fresh tokens, and namespaces for the tests to work in.

/** kubectl as the cluster's admin; its output. */
export const kubectl = (...args: string[]): string =>
  execFileSync(join(REPO_ROOT, "cluster-up/kubectl.sh"), args, { encoding: "utf8" });

let applied = false;

export function tokenOf(user: "admin" | "viewer"): string {
  if (!applied) {
    kubectl("apply", "-f", join(REPO_ROOT, "cluster-up/users.yaml"));
    applied = true;
  }
  return kubectl("-n", "default", "create", "token", `kubevirt-ts-${user}`, "--duration=1h").trim();
}

/** A token of `user` bound to a Secret of its own: deleting the Secret revokes it, as an expiry would end it. */
export function revocableToken(user: "admin" | "viewer"): { token: string; revoke: () => void } {
  tokenOf(user);
  const secret = `e2e-session-${Date.now().toString(36)}`;
  kubectl("-n", "default", "create", "secret", "generic", secret);
  const token = kubectl(
    "-n",
    "default",
    "create",
    "token",
    `kubevirt-ts-${user}`,
    "--duration=1h",
    "--bound-object-kind=Secret",
    `--bound-object-name=${secret}`,
  ).trim();
  return {
    token,
    revoke: () => {
      kubectl("-n", "default", "delete", "secret", secret);
    },
  };
}

/** The dashboard's certificate as the chart stores it (PEM), and the Secret's CA. */
export function dashboardCertificate(): { cert: string; ca: string } {
  const field = (key: string) =>
    Buffer.from(
      kubectl(
        "-n",
        "kubevirt-ts",
        "get",
        "secret",
        "kubevirt-ts-web-tls",
        "-o",
        `jsonpath={.data.${key.replace(".", "\\.")}}`,
      ),
      "base64",
    ).toString("utf8");
  return { cert: field("tls.crt"), ca: field("ca.crt") };
}

export function createNamespace(prefix: string): string {
  const name = `${prefix}-${Date.now().toString(36)}`;
  kubectl("create", "namespace", name);
  return name;
}

export function deleteNamespace(name: string): void {
  kubectl("delete", "namespace", name, "--wait=false");
}

/** A PersistentVolumeClaim of the cluster's default StorageClass. */
export function claim(namespace: string, name: string, size: string): void {
  const body = {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: size } } },
  };
  execFileSync(join(REPO_ROOT, "cluster-up/kubectl.sh"), ["create", "-f", "-"], {
    input: JSON.stringify(body),
    encoding: "utf8",
  });
}

/** Creates an object as the cluster's admin (kubectl create). */
export function createObject(object: unknown): void {
  execFileSync(join(REPO_ROOT, "cluster-up/kubectl.sh"), ["create", "-f", "-"], {
    input: JSON.stringify(object),
    encoding: "utf8",
  });
}

export function imageOf(name: string): string {
  const images = JSON.parse(readFileSync(join(REPO_ROOT, ".local/images.json"), "utf8")) as {
    name: string;
    reference: string;
  }[];
  return images.find((i) => i.name === name)?.reference ?? `no ${name} image`;
}
