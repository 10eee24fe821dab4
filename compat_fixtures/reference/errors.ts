// The two ways `trim` refuses its input (Python: context_manager.errors). Running out of budget
// is not an error here: `trim` returns an Overflow object for it (see trim.ts).

/** A message cannot be understood, or it breaks the tool-call protocol. */
export class InvalidMessageError extends Error {
  constructor(
    readonly reason: string,
    /** Position of the offending message in the input list. */
    readonly index: number | null = null,
  ) {
    super(index === null ? reason : `message ${index}: ${reason}`);
    this.name = "InvalidMessageError";
  }
}

/** An option is missing or out of range. */
export class ConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigurationError";
  }
}
