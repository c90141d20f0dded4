import { type MigrationFigures, describeFigures } from "../../lib/migrations";

// A live migration's figures (libvirt's job, read by the handler of the node
// it left): a bar of the data copied while it runs, one line of what was sent
// and is left, and once it switched over, how long the guest was paused.

export function MigrationFiguresLine({ figures }: { figures: MigrationFigures }) {
  const view = describeFigures(figures);
  return (
    <div data-testid="migration-figures">
      {view.copied !== undefined && <progress aria-label="Data copied" max={1} value={view.copied} />}
      <p>
        {view.line}
        {view.downtime !== undefined && (
          <>
            {" "}
            The guest was paused for <strong data-testid="migration-downtime">{view.downtime}</strong> to switch over.
          </>
        )}
      </p>
    </div>
  );
}
