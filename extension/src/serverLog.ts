// The server's error stream, line by line, at the level each line was logged at. Pure, no `vscode`.
// The server logs `LEVEL name: message` (Python's logging, server.py's format); anything else on
// that stream (a traceback, a crash) is an error.

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

const LEVELS: Record<string, LogLevel> = {
  DEBUG: "debug",
  INFO: "info",
  WARNING: "warn",
  ERROR: "error",
  CRITICAL: "error",
};

/** The level of one line of the server's stderr, and the line without its level word. */
export function serverLogLine(line: string): { level: LogLevel; message: string } {
  const match = /^(DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/.exec(line);
  if (match) {
    return { level: LEVELS[match[1]], message: match[2] };
  }
  return { level: "error", message: line };
}
