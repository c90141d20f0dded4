#!/usr/bin/env node
// The local cluster's commands (see the Makefile):
//   cluster.ts up <bin-dir> <local-path-provisioner> <coredns> [nodes]
//                               a fresh cluster of one node (or as many as asked), Ready, with its DNS and storage
//   cluster.ts sync <bin-dir>   images, CRDs and chart into it, rolled out
//   cluster.ts down             stop it and remove every trace of it
//   cluster.ts leftovers        list what is left of it (nothing after down)
import { rm } from "node:fs/promises";
import { cleanUp, leftovers } from "../src/cleanup.ts";
import { KUBECONFIG_PATH } from "../src/config.ts";
import { clusterSync } from "../src/sync.ts";
import { clusterUp } from "../src/up.ts";

const [command, binDir, provisioner, coredns, nodes = "1"] = process.argv.slice(2);
if (command === "up" && binDir && provisioner && coredns) {
  await clusterUp({ binDir, provisioner, coredns, nodes: Number(nodes) });
} else if (command === "sync" && binDir) {
  await clusterSync(binDir);
} else if (command === "down") {
  await cleanUp();
  await rm(KUBECONFIG_PATH, { force: true });
  const left = await leftovers();
  if (left.length > 0) {
    console.error(`cluster-down left these behind:\n${left.join("\n")}`);
    process.exitCode = 1;
  }
} else if (command === "leftovers") {
  const left = await leftovers();
  console.log(left.length === 0 ? "nothing" : left.join("\n"));
} else {
  console.error(
    "usage: cluster.ts up <bin-dir> <local-path-provisioner> <coredns> [nodes] | sync <bin-dir> | down | leftovers",
  );
  process.exitCode = 2;
}
