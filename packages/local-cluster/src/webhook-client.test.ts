import { describe, expect, test } from "vitest";
import { parse } from "yaml";
import { admissionConfiguration, serviceWebhookHost, webhookKubeconfig } from "./webhook-client.ts";

// The files that make kube-apiserver present its client certificate to
// virt-api's webhooks, in the shapes kube-apiserver reads.

describe("the API server's webhook client configuration", () => {
  test(
    "the kubeconfig names the certificate for the Service's host, as the API " +
      "server looks it up (port 443 left out)",
    () => {
      const host = serviceWebhookHost("virt-api", "kubevirt-ts");
      expect(host).toBe("virt-api.kubevirt-ts.svc");
      expect(parse(webhookKubeconfig(host, { cert: "/pki/client.crt", key: "/pki/client.key" }))).toEqual({
        apiVersion: "v1",
        kind: "Config",
        users: [
          {
            name: "virt-api.kubevirt-ts.svc",
            user: { "client-certificate": "/pki/client.crt", "client-key": "/pki/client.key" },
          },
        ],
      });
    },
  );

  test("the admission configuration gives it to both webhook plugins", () => {
    const config = parse(admissionConfiguration("/pki/admission.kubeconfig")) as {
      apiVersion: string;
      kind: string;
      plugins: { name: string; configuration: unknown }[];
    };
    expect(config.apiVersion).toBe("apiserver.config.k8s.io/v1");
    expect(config.kind).toBe("AdmissionConfiguration");
    const webhookConfiguration = {
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "WebhookAdmissionConfiguration",
      kubeConfigFile: "/pki/admission.kubeconfig",
    };
    expect(config.plugins).toEqual([
      { name: "ValidatingAdmissionWebhook", configuration: webhookConfiguration },
      { name: "MutatingAdmissionWebhook", configuration: webhookConfiguration },
    ]);
  });
});
