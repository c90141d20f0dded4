import { isExportServer } from "./env.ts";

// The importer image's two roles: an export server where the controller made the pod for a VirtualMachineExport
// (export-main.ts), else the importer of one DataVolume (import-main.ts). Each reads only its own environment.
if (isExportServer()) await import("./export-main.ts");
else await import("./import-main.ts");
