import { type StatusTone, statusInWords, statusTone } from "@kubevirt-ts/vm-rules";

// A VM's status as a badge: an icon and a colour by its tone (vm-rules'
// statusTone), and the status in words, so that colour is never the only
// sign. The icon is decoration: the words carry the meaning.

const ICONS: Record<StatusTone, React.ReactNode> = {
  running: <path d="M4 2.5v11l9-5.5z" />,
  paused: <path d="M4 2.5h3v11H4zM9 2.5h3v11H9z" />,
  stopped: <rect x="3.5" y="3.5" width="9" height="9" rx="1" />,
  transition: <path d="M8 1.5a6.5 6.5 0 1 0 6.5 6.5h-2A4.5 4.5 0 1 1 8 3.5z" />,
  problem: <path d="M8 1 15.5 14.5H.5zM7 6v4.5h2V6zm0 5.5v2h2v-2z" fillRule="evenodd" />,
};

export function StatusBadge({ printableStatus, testId }: { printableStatus: string | undefined; testId?: string }) {
  const tone = statusTone(printableStatus);
  return (
    <span className={`status status-${tone}`} data-status={printableStatus ?? "Stopped"} data-tone={tone}>
      <svg viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false" fill="currentColor">
        {ICONS[tone]}
      </svg>
      <span data-testid={testId}>{statusInWords(printableStatus)}</span>
    </span>
  );
}
