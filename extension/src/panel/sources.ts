// Where the panel's `openSource {fileId, line}` leads: the file id is looked up in the run's own file
// table (workspace-relative paths), joined to the run's root, and accepted only inside a workspace
// folder. Pure path logic (no `vscode`, no file system): the host adds the check of the real path
// (symbolic links) before it opens anything.
import * as path from "path";

export type Resolved = { path: string } | { refused: string };

/** `child` lies in `folder` (or is it), both absolute and normalised. */
export function isInside(child: string, folder: string, paths: typeof path = path): boolean {
  const rel = paths.relative(folder, child);
  return rel === "" || (!rel.startsWith("..") && !paths.isAbsolute(rel));
}

/**
 * The absolute path of `fileId` in `files` (file id → path relative to `root`), or why it is refused.
 * `folders` are the workspace folders' paths.
 */
export function resolveSource(
  fileId: string,
  files: Record<string, string>,
  root: string | null,
  folders: string[],
  paths: typeof path = path,
): Resolved {
  const rel = Object.prototype.hasOwnProperty.call(files, fileId) ? files[fileId] : undefined;
  if (typeof rel !== "string" || rel === "") return { refused: `file id ${fileId} is not in the run's file table` };
  if (!root || !paths.isAbsolute(root)) return { refused: `the run has no workspace root to find ${rel} in` };
  // the table's paths are relative, with POSIX separators; anything else is not taken
  if (paths.isAbsolute(rel) || /^[A-Za-z]:/.test(rel) || rel.split(/[\\/]/).includes("..")) {
    return { refused: `${rel.slice(0, 200)} is not a path inside the workspace` };
  }
  const absolute = paths.resolve(root, ...rel.split("/"));
  if (!isInside(absolute, paths.resolve(root), paths)) return { refused: `${rel.slice(0, 200)} is outside the run's root` };
  if (!folders.some((folder) => isInside(absolute, paths.resolve(folder), paths))) {
    return { refused: `${absolute} is not inside a folder of this workspace` };
  }
  return { path: absolute };
}
