import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

// The local cluster's two dashboard users (cluster-up/users.yaml): an admin
// and a viewer, with fresh tokens, and namespaces for the tests to work in.

const kubectl = (...args: string[]) => execFileSync(join(REPO_ROOT, "cluster-up/kubectl.sh"), args, { encoding: "utf8" });

let applied = false;

export function tokenOf(user: "admin" | "viewer"): string {
  if (!applied) {
    kubectl("apply", "-f", join(REPO_ROOT, "cluster-up/users.yaml"));
    applied = true;
  }
  return kubectl("-n", "default", "create", "token", `kubevirt-ts-${user}`, "--duration=1h").trim();
}

export function createNamespace(prefix: string): string {
  const name = `${prefix}-${Date.now().toString(36)}`;
  kubectl("create", "namespace", name);
  return name;
}

export function deleteNamespace(name: string): void {
  kubectl("delete", "namespace", name, "--wait=false");
}

export function imageOf(name: string): string {
  const images = JSON.parse(readFileSync(join(REPO_ROOT, ".local/images.json"), "utf8")) as { name: string; reference: string }[];
  return images.find((i) => i.name === name)?.reference ?? `no ${name} image`;
}
