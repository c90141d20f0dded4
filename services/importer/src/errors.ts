/** A failure whose message says what to do: the importer's termination message, and so the DataVolume's. */
export class ImportError extends Error {}
