import type { Metadata } from "next";
import { VirtualMachinesView } from "./virtual-machines-view";

export const metadata: Metadata = { title: "Virtual machines" };

export default function VirtualMachinesPage() {
  return <VirtualMachinesView />;
}
