import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { type Server, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, BlockList } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ImageRefused,
  QEMU_IMG_LIMITS,
  qemuImg as qemuImgLimited,
  selfSignedServingCertificate,
} from "@kubevirt-ts/runtime";
import { mountedCertificates, mountedHeaders, redirectDenyList } from "../src/http-source.ts";
import { type ImportOptions, importDisk, sourceLimit } from "../src/import.ts";
import { imageInfo, qcow2With, qemuImg } from "./images.ts";

// The importer against the real qemu-img and a real HTTP server on
// loopback: each source fills a folder as it would a claim.

const MIB = 1024 * 1024;
let root: string;
let server: Server;
let base: string;
const served = new Map<string, Buffer>();
const redirects = new Map<string, string>();

async function target(): Promise<{ targetDir: string; sourceDir: string }> {
  const dir = await mkdtemp(join(root, "claim-"));
  await mkdir(join(dir, "target"));
  await mkdir(join(dir, "source"));
  return { targetDir: join(dir, "target"), sourceDir: join(dir, "source") };
}

const options = (dirs: { targetDir: string; sourceDir: string }, rest: Partial<ImportOptions>): ImportOptions => ({
  source: "blank",
  endpoint: "",
  headers: [],
  diskBytes: 64 * MIB,
  redirectDenyList: redirectDenyList(),
  ...dirs,
  ...rest,
});

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "importer-"));
  server = createServer((req, res) => {
    if (req.headers["x-token"] !== "secret" && req.url?.startsWith("/private")) {
      res.writeHead(403).end();
      return;
    }
    const redirect = redirects.get(req.url ?? "");
    if (redirect !== undefined) {
      res.writeHead(302, { location: redirect }).end();
      return;
    }
    const body = served.get(req.url ?? "");
    if (!body) {
      res.writeHead(404, "Not Found").end();
      return;
    }
    // Under /chunked/ no length is announced, and the body is sent in 1 MiB pieces as the client reads.
    if (req.url?.startsWith("/chunked/")) {
      void pipeline(
        Readable.from(
          (function* () {
            for (let at = 0; at < body.length; at += MIB) yield body.subarray(at, at + MIB);
          })(),
        ),
        res,
      ).catch(() => undefined);
      return;
    }
    res.writeHead(200, { "content-length": String(body.length) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

describe("an https source with CDI's certConfigMap and secretExtraHeaders, as an export's manifests name them", () => {
  it("verifies the server with the mounted certificates and sends the mounted Secrets' headers", async () => {
    const host = "virt-export-e.ns.svc";
    const tls = selfSignedServingCertificate({
      commonName: host,
      dnsNames: [host, "localhost"],
      validForMs: 3_600_000,
    });
    const image = join(root, "exported.qcow2");
    qcow2With(image, 8, "exported and back");
    const body = gzipSync(readFileSync(image));
    const https = createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
      if (req.headers["x-kubevirt-export-token"] !== "the-token") {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(200, { "content-length": String(body.length) }).end(body);
    });
    await new Promise<void>((resolve) => https.listen(0, "127.0.0.1", resolve));
    try {
      const url = `https://localhost:${String((https.address() as AddressInfo).port)}/volumes/root/disk.img.gz`;
      // As the kubelet mounts them: the ConfigMap's keys as files beside its ..data link, each Secret in its folder.
      const certs = await mkdtemp(join(root, "certs-"));
      await writeFile(join(certs, "ca.pem"), tls.certPem);
      await mkdir(join(certs, "..data"));
      const headers = await mkdtemp(join(root, "headers-"));
      await mkdir(join(headers, "0"));
      await writeFile(join(headers, "0", "token"), "x-kubevirt-export-token:the-token");
      const dirs = await target();
      await importDisk(
        options(dirs, {
          source: "http",
          endpoint: url,
          headers: await mountedHeaders(headers),
          ca: await mountedCertificates(certs),
        }),
        () => undefined,
      );
      expect(readFileSync(join(dirs.targetDir, "disk.img")).subarray(0, 17).toString()).toBe("exported and back");
      // Without the certificates the server is not trusted; without the header it refuses.
      await expect(
        importDisk(options(await target(), { source: "http", endpoint: url }), () => undefined),
      ).rejects.toThrow(/Unable to connect to http data source/);
      await expect(
        importDisk(
          options(await target(), { source: "http", endpoint: url, ca: await mountedCertificates(certs) }),
          () => undefined,
        ),
      ).rejects.toThrow(/401/);
      // A value that is not a header is refused by name.
      await writeFile(join(headers, "0", "bad"), "no colon here");
      await expect(mountedHeaders(headers)).rejects.toThrow(/not a header 'Name: value'/);
    } finally {
      https.close();
    }
  });
});

describe("importDisk", () => {
  it("makes a blank disk sparse at the size asked for", async () => {
    const dirs = await target();
    const progress: number[] = [];
    expect(await importDisk(options(dirs, { source: "blank" }), (f) => progress.push(f))).toBe("imported");
    const disk = await stat(join(dirs.targetDir, "disk.img"));
    expect(disk.size).toBe(64 * MIB);
    expect(disk.blocks * 512).toBeLessThan(MIB);
    expect(progress.at(-1)).toBe(1);
  });

  it(
    "downloads a gzip-compressed qcow2 over HTTP with the headers asked for, converts " +
      "it to raw and grows it to the disk's size",
    async () => {
      const dirs = await target();
      const image = join(root, "served.qcow2");
      qcow2With(image, 8, "kubevirt-ts was here");
      served.set("/private/disk.qcow2.gz", gzipSync(readFileSync(image)));
      const progress: number[] = [];
      await importDisk(
        options(dirs, { source: "http", endpoint: `${base}/private/disk.qcow2.gz`, headers: ["X-Token: secret"] }),
        (f) => progress.push(f),
      );
      const disk = join(dirs.targetDir, "disk.img");
      expect(imageInfo(disk)).toMatchObject({ format: "raw", "virtual-size": 64 * MIB });
      expect(readFileSync(disk).subarray(0, 20).toString()).toBe("kubevirt-ts was here");
      expect(progress.some((f) => f > 0 && f < 1)).toBe(true);
      // Nothing but the disk is left on the claim.
      expect(await readdir(dirs.targetDir)).toEqual(["disk.img"]);
    },
  );

  it("says what the server answered when the image is not there, and leaves no disk", async () => {
    const dirs = await target();
    await expect(
      importDisk(options(dirs, { source: "http", endpoint: `${base}/missing.img` }), () => undefined),
    ).rejects.toThrow(`the http data source answered 404 Not Found for ${base}/missing.img`);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("refuses an image larger than the disk asked for, leaving no disk.img behind", async () => {
    const dirs = await target();
    const image = join(root, "big.qcow2");
    qemuImg("create", "-f", "qcow2", image, "128M");
    served.set("/big.qcow2", readFileSync(image));
    await expect(
      importDisk(options(dirs, { source: "http", endpoint: `${base}/big.qcow2` }), () => undefined),
    ).rejects.toThrow(/virtual size is 0.13 GiB .* larger than the disk asked for, 0.06 GiB: ask for at least 1Gi/);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("refuses an image with a backing file, which would read another file", async () => {
    const dirs = await target();
    const backing = join(root, "backing.qcow2");
    qemuImg("create", "-f", "qcow2", backing, "8M");
    qemuImg("create", "-f", "qcow2", "-F", "qcow2", "-b", backing, join(dirs.sourceDir, "disk.qcow2"));
    await expect(importDisk(options(dirs, { source: "registry" }), () => undefined)).rejects.toThrow(
      /has a backing file .*give a self-contained image/,
    );
  });

  it("refuses a qcow2 image with an external data file, naming the file", async () => {
    const dirs = await target();
    const outside = join(root, "outside.raw");
    qemuImg("create", "-f", "qcow2", "-o", `data_file=${outside}`, join(dirs.sourceDir, "disk.qcow2"), "8M");
    await expect(importDisk(options(dirs, { source: "registry" }), () => undefined)).rejects.toThrow(
      `the qcow2 image has an external data file (${outside}); give a self-contained image`,
    );
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("refuses a VMDK whose extent is another file (/etc/passwd)", async () => {
    const dirs = await target();
    const descriptor = [
      "# Disk DescriptorFile",
      "version=1",
      "CID=fffffffe",
      "parentCID=ffffffff",
      'createType="monolithicFlat"',
      "",
      'RW 2048 FLAT "/etc/passwd" 0',
      "",
    ].join("\n");
    served.set("/passwd.vmdk", Buffer.from(descriptor));
    await expect(
      importDisk(options(dirs, { source: "http", endpoint: `${base}/passwd.vmdk` }), () => undefined),
    ).rejects.toThrow("the vmdk image has an extent in another file (/etc/passwd)");
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("takes a single-file VMDK, whose one extent is itself", async () => {
    const dirs = await target();
    const raw = join(root, "vmdk.raw");
    qcow2With(join(root, "for-vmdk.qcow2"), 4, "a vmdk disk");
    qemuImg("convert", "-f", "qcow2", "-O", "raw", join(root, "for-vmdk.qcow2"), raw);
    qemuImg("convert", "-f", "raw", "-O", "vmdk", raw, join(dirs.sourceDir, "disk.vmdk"));
    await importDisk(options(dirs, { source: "registry" }), () => undefined);
    expect(readFileSync(join(dirs.targetDir, "disk.img")).subarray(0, 11).toString()).toBe("a vmdk disk");
  });

  it("refuses a file named as QEMU's json: pseudo-protocol", async () => {
    const dirs = await target();
    const name = 'json:{"driver":"null-co","size":"1048576"}';
    await writeFile(join(dirs.sourceDir, name), Buffer.alloc(512));
    await expect(importDisk(options(dirs, { source: "registry" }), () => undefined)).rejects.toThrow(
      /file name .*begins with "json:", which QEMU reads as options, not a file; rename it/,
    );
  });

  it(
    "copies a claim's disk as raw, whatever header a guest wrote into it: a qcow2 header " +
      "naming a backing file is copied as bytes, never followed",
    async () => {
      const dirs = await target();
      const secret = join(root, "secret.raw");
      await writeFile(secret, Buffer.concat([Buffer.from("another tenant's data"), Buffer.alloc(MIB)]));
      qemuImg("create", "-f", "qcow2", "-F", "raw", "-b", secret, join(dirs.sourceDir, "disk.img"));
      await importDisk(options(dirs, { source: "pvc" }), () => undefined);
      const disk = readFileSync(join(dirs.targetDir, "disk.img"));
      expect(disk.subarray(0, 4)).toEqual(Buffer.from([0x51, 0x46, 0x49, 0xfb]));
      expect(disk.includes(Buffer.from("another tenant's data"))).toBe(false);
    },
  );

  it("runs qemu-img under its limits: with too little address space it is stopped, with a clear error", async () => {
    const image = join(root, "limited.qcow2");
    qemuImg("create", "-f", "qcow2", image, "1M");
    await expect(qemuImgLimited(["info", "--output=json", image], { addressSpaceBytes: 16 * MIB })).rejects.toThrow(
      ImageRefused,
    );
    await expect(qemuImgLimited(["info", "--output=json", image], QEMU_IMG_LIMITS.info)).resolves.toContain(
      '"format": "qcow2"',
    );
  });

  it("does not follow a redirect into a denied range (loopback here), nor more than five redirects", async () => {
    const dirs = await target();
    qcow2With(join(root, "redirected.qcow2"), 4, "redirected");
    served.set("/redirected.qcow2", readFileSync(join(root, "redirected.qcow2")));
    redirects.set("/to-inside", "/redirected.qcow2");
    await expect(
      importDisk(options(dirs, { source: "http", endpoint: `${base}/to-inside` }), () => undefined),
    ).rejects.toThrow(
      `the http data source redirected to ${base}, whose address 127.0.0.1 is inside the cluster or a private range`,
    );
    expect(await readdir(dirs.targetDir)).toEqual([]);
    // Where the range is allowed, the same redirect is followed.
    const allowed = await target();
    await importDisk(
      options(allowed, { source: "http", endpoint: `${base}/to-inside`, redirectDenyList: new BlockList() }),
      () => undefined,
    );
    expect(readFileSync(join(allowed.targetDir, "disk.img")).subarray(0, 10).toString()).toBe("redirected");
    for (let i = 0; i < 6; i++) redirects.set(`/loop${String(i)}`, `/loop${String(i + 1)}`);
    await expect(
      importDisk(
        options(await target(), { source: "http", endpoint: `${base}/loop0`, redirectDenyList: new BlockList() }),
        () => undefined,
      ),
    ).rejects.toThrow("the http data source redirected more than 5 times (last to /loop6)");
  });

  it(
    "stops reading a body larger than the disk can take, announced or not, and a " +
      "gzip bomb, never writing past the bound",
    async () => {
      const diskBytes = 4 * MIB;
      const limit = sourceLimit(diskBytes);
      served.set("/announced.img", Buffer.alloc(8 * MIB));
      const announced = await target();
      await expect(
        importDisk(
          options(announced, { source: "http", endpoint: `${base}/announced.img`, diskBytes }),
          () => undefined,
        ),
      ).rejects.toThrow(
        `the http data source announces ${String(8 * MIB)} bytes, more than an image of the ` +
          `disk asked for can hold (${String(limit)} bytes`,
      );
      expect(await readdir(announced.targetDir)).toEqual([]);
      for (const [path, body] of [
        ["/chunked/forever.img", Buffer.alloc(64 * MIB, 1)],
        ["/chunked/bomb.img.gz", gzipSync(Buffer.alloc(256 * MIB))],
      ] as const) {
        served.set(path, body);
        const dirs = await target();
        await expect(
          importDisk(options(dirs, { source: "http", endpoint: `${base}${path}`, diskBytes }), () => undefined),
        ).rejects.toThrow(`holds more than ${String(limit)} bytes, more than an image of the disk asked for can`);
        expect((await stat(join(dirs.targetDir, "disk.img.download"))).size).toBeLessThanOrEqual(limit);
      }
    },
  );

  it("refuses an xz-compressed image by name", async () => {
    const dirs = await target();
    served.set("/disk.img.xz", Buffer.concat([Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), Buffer.alloc(64)]));
    await expect(
      importDisk(options(dirs, { source: "http", endpoint: `${base}/disk.img.xz` }), () => undefined),
    ).rejects.toThrow(/xz-compressed.*uncompressed or gzip-compressed/);
    expect(await readdir(dirs.targetDir)).not.toContain("disk.img");
  });

  it("copies another claim's (raw) disk, grown to the disk's size", async () => {
    const dirs = await target();
    const content = Buffer.alloc(16 * MIB);
    content.write("cloned");
    await writeFile(join(dirs.sourceDir, "disk.img"), content);
    const progress: number[] = [];
    await importDisk(options(dirs, { source: "pvc", diskBytes: 32 * MIB }), (f) => progress.push(f));
    const disk = join(dirs.targetDir, "disk.img");
    expect(imageInfo(disk)["virtual-size"]).toBe(32 * MIB);
    expect(readFileSync(disk).subarray(0, 6).toString()).toBe("cloned");
  });

  it("copies a disk a running QEMU holds locked only when told the source is in use (a quiesced guest's)", async () => {
    const dirs = await target();
    const content = Buffer.alloc(16 * MIB);
    content.write("running");
    const source = join(dirs.sourceDir, "disk.img");
    await writeFile(source, content);
    // qemu-io keeps the image open for writing, with QEMU's lock, as a guest's QEMU does, until its input ends.
    const holder = spawn("qemu-io", ["-f", "raw", source], { stdio: ["pipe", "pipe", "pipe"] });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.once("data", () => {
          resolve();
        });
        holder.once("error", reject);
      });
      await expect(importDisk(options(dirs, { source: "pvc", diskBytes: 16 * MIB }), () => undefined)).rejects.toThrow(
        /lock/,
      );
      await importDisk(options(dirs, { source: "pvc", diskBytes: 16 * MIB, sourceInUse: true }), () => undefined);
      expect(readFileSync(join(dirs.targetDir, "disk.img")).subarray(0, 7).toString()).toBe("running");
    } finally {
      holder.stdin.end();
      holder.kill();
    }
  });

  it("takes a containerDisk's disk copied out of its image", async () => {
    const dirs = await target();
    qcow2With(join(dirs.sourceDir, "guest.qcow2"), 4, "from a registry");
    await importDisk(options(dirs, { source: "registry" }), () => undefined);
    expect(readFileSync(join(dirs.targetDir, "disk.img")).subarray(0, 15).toString()).toBe("from a registry");
  });

  it(
    "keeps a disk.img already there (an import finished before a restart), and " +
      "removes what an interrupted one left",
    async () => {
      const dirs = await target();
      await writeFile(join(dirs.targetDir, "disk.img"), "the guest's data");
      expect(await importDisk(options(dirs, { source: "blank" }), () => undefined)).toBe("already there");
      expect(readFileSync(join(dirs.targetDir, "disk.img"), "utf8")).toBe("the guest's data");

      const interrupted = await target();
      await writeFile(join(interrupted.targetDir, "disk.img.partial"), "half");
      await importDisk(options(interrupted, { source: "blank" }), () => undefined);
      expect((await readdir(interrupted.targetDir)).sort()).toEqual(["disk.img"]);
    },
  );
});
