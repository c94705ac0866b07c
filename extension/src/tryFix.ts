// "Try this fix (measure it)": the server's code action on a finding's variant or a rule's quick fix
// runs `stepscope.tryFix` here, which asks as Measure This Step asks (trust, the first real run),
// runs the server's `stepscope.try` with its progress in a cancellable notification, then shows the
// verdict in a notification and the change as a diff (the file beside the text that was measured).
// Apply asks the server for the very edit that was measured (`stepscope/applyTry`; refused in one
// line when the file changed since), applies it and saves the file. "Stepscope: Try My Unsaved
// Changes" tries the editor's text of a file against the file on disk. A cancel stops the program;
// the server removes what it made for the try, and nothing is edited.
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, ResponseError, WorkspaceEdit as LspWorkspaceEdit } from "vscode-languageclient/node";
import { confirmRealRun, inProgress, programFor, requestWithProgress, trustedToRun } from "./profile";
import { firstLine } from "./python";
import { parseTryResult, TriedChange, TryResult } from "./result";
import { ServerController, showErrorWithLogs, TRY_COMMAND } from "./server";
import { readSettings } from "./settings";

export { TRY_COMMAND };
export const TRY_UNSAVED_COMMAND = "stepscope.tryUnsaved";
const SERVER_TRY_COMMAND = "stepscope.try";
const CHANGE_REQUEST = "stepscope/tryChange";
const APPLY_REQUEST = "stepscope/applyTry";
const OPEN_PANEL_COMMAND = "stepscope.openPanel";
/** the text a try measured, shown in a diff editor beside the file */
export const TRY_SCHEME = "stepscope-try";

/** What the server's code action passes: the document, and what to try there. */
interface TryTarget {
  uri: string;
  position: { line: number; character: number };
  finding?: Record<string, unknown>;
  fix?: { code: string; line: number };
  text?: boolean;
  title?: string;
}

interface ChangedFile {
  path: string;
  uri: string;
  before: string | null;
  after: string;
}

export class TryCommand implements vscode.TextDocumentContentProvider {
  /** the measured text of each file a try changed, by the URI of its diff editor's right side */
  private readonly measured = new Map<string, string>();

  constructor(
    private readonly server: ServerController,
    private readonly log: vscode.LogOutputChannel,
    private readonly state: vscode.Memento,
    private readonly onRunsChanged: () => void,
  ) {}

  register(): vscode.Disposable {
    return vscode.Disposable.from(
      vscode.workspace.registerTextDocumentContentProvider(TRY_SCHEME, this),
      vscode.commands.registerCommand(TRY_COMMAND, (arg?: unknown) => this.run(arg)),
      vscode.commands.registerCommand(TRY_UNSAVED_COMMAND, () => this.tryUnsaved()),
    );
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.measured.get(uri.toString()) ?? "";
  }

  private async tryUnsaved(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "python" || editor.document.uri.scheme !== "file") {
      void vscode.window.showErrorMessage("Stepscope: open a Python file of the workspace, with the changes to try, and put the cursor in its step loop.");
      return;
    }
    if (!editor.document.isDirty) {
      void vscode.window.showInformationMessage(`Stepscope: ${path.basename(editor.document.uri.fsPath)} has no unsaved changes to try.`);
      return;
    }
    const cursor = editor.selection.active;
    await this.run({
      uri: editor.document.uri.toString(), position: { line: cursor.line, character: cursor.character }, text: true,
      title: `your unsaved changes to ${path.basename(editor.document.uri.fsPath)}`,
    });
  }

  async run(arg?: unknown): Promise<void> {
    const target = targetFrom(arg);
    if (typeof target === "string") {
      void vscode.window.showErrorMessage(target);
      return;
    }
    if (!(await trustedToRun("try a change to"))) {
      return;
    }
    if (inProgress.doing) {
      void vscode.window.showInformationMessage(`Stepscope is already ${inProgress.doing}; cancel that run first.`);
      return;
    }
    const client = this.server.languageClient;
    if (!client) {
      void showErrorWithLogs("Stepscope's server is not running, so it cannot try the change.", this.log);
      return;
    }
    const uri = vscode.Uri.parse(target.uri);
    const document = await vscode.workspace.openTextDocument(uri);
    // A fix or a finding's variant is made on the file as it is on disk: try what the user sees.
    if (!target.text && document.isDirty && !(await document.save())) {
      void vscode.window.showErrorMessage(`Stepscope: save ${path.basename(uri.fsPath)} before trying a change to it.`);
      return;
    }
    const settings = readSettings(uri);
    const program = await programFor(uri, settings, this.log);
    if (!program) {
      return;
    }
    const title = target.title ?? "the change";
    if (!(await confirmRealRun(this.state, "measure", title))) {
      return;
    }
    inProgress.doing = "trying a change";
    this.log.info(`Trying ${title} with ${program.python}.`);
    try {
      const outcome = await requestWithProgress(client, this.log, `Stepscope: trying ${title}`, SERVER_TRY_COMMAND, {
        ...target, python: program.python, launch: program.launch, measure: settings.measure, profile: settings.profile,
        confirmed: true,
      }, "try");
      if (outcome === undefined) {
        void vscode.window.showInformationMessage("Stepscope: the try was cancelled; no file was changed.");
        return;
      }
      await this.show(client, parseTryResult(outcome));
    } catch (error) {
      const reason = firstLine(error);
      this.log.error(`Try failed: ${reason}`);
      const folder = error instanceof ResponseError ? (error.data as { runDir?: unknown } | undefined)?.runDir : undefined;
      if (typeof folder === "string") {
        this.log.info(`The failed run's folder: ${folder} (its program logs have the program's output).`);
      }
      void showErrorWithLogs(`Stepscope: the try failed: ${reason}. No file was changed.`, this.log);
    } finally {
      inProgress.doing = undefined;
      this.onRunsChanged();
    }
  }

  /** The verdict in a notification, the change shown as a diff beside the file; Apply on request. */
  private async show(client: LanguageClient, result: TryResult): Promise<void> {
    this.log.info(`Try done: ${result.summary}`);
    const shown = result.tries.find((t) => t.runId === result.runId) ?? result.tries[0];
    for (const tried of result.tries) {
      this.log.info(`  ${tried.name}: ${tried.headline} (run ${tried.runId})`);
    }
    await this.showDiff(client, shown);
    const actions: string[] = [];
    if (shown.applicable) {
      actions.push(shown.resultsChanged ? "Apply Anyway…" : "Apply");
    }
    actions.push("Open in Panel");
    const words = shown.applicable || !shown.whyNot ? result.summary : `${result.summary} (${shown.whyNot})`;
    const choice = await vscode.window.showInformationMessage(`Stepscope: ${words}`, ...actions);
    if (choice === "Apply" || choice === "Apply Anyway…") {
      await this.apply(client, shown, choice === "Apply Anyway…");
    } else if (choice === "Open in Panel") {
      await vscode.commands.executeCommand(OPEN_PANEL_COMMAND, { runId: shown.runId, kind: "measure" });
    }
  }

  private async showDiff(client: LanguageClient, tried: TriedChange): Promise<void> {
    const change = await client.sendRequest<{ files?: ChangedFile[] }>(CHANGE_REQUEST, { runId: tried.runId });
    const file = change.files?.[0];
    if (!file) {
      return;
    }
    const right = vscode.Uri.from({ scheme: TRY_SCHEME, path: `/${tried.runId}/${file.path}` });
    this.measured.set(right.toString(), file.after);
    await vscode.commands.executeCommand(
      "vscode.diff", vscode.Uri.parse(file.uri), right,
      `${path.basename(file.path)} ↔ tried: ${tried.title}`, { preview: true, preserveFocus: true },
    );
  }

  private async apply(client: LanguageClient, tried: TriedChange, resultsChanged: boolean): Promise<void> {
    if (resultsChanged) {
      const sure = await vscode.window.showWarningMessage(
        `${tried.title} changed the results: the values the step computes differ from the code as it is. Apply it anyway?`,
        { modal: true }, "Apply Anyway",
      );
      if (sure !== "Apply Anyway") {
        return;
      }
    }
    try {
      const answer = await client.sendRequest<{ edit: LspWorkspaceEdit; files: string[] }>(APPLY_REQUEST, {
        runId: tried.runId, accept: resultsChanged,
      });
      const edit = await client.protocol2CodeConverter.asWorkspaceEdit(answer.edit);
      if (!edit || !(await vscode.workspace.applyEdit(edit))) {
        throw new Error("the editor did not apply the edit");
      }
      for (const [uri] of edit.entries()) {
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        await document?.save();
      }
      this.log.info(`Applied ${tried.name} (run ${tried.runId}) to ${answer.files.join(", ")}.`);
      void vscode.window.showInformationMessage(`Stepscope: applied ${tried.title} to ${answer.files.join(", ")}.`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: ${firstLine(error)}`);
    }
  }
}

function targetFrom(arg: unknown): TryTarget | string {
  const candidate = (arg ?? {}) as Partial<TryTarget>;
  const position = candidate.position;
  if (
    typeof candidate.uri === "string" && position && Number.isInteger(position.line)
    && Number.isInteger(position.character)
    && (typeof candidate.finding === "object" || typeof candidate.fix === "object" || candidate.text === true)
  ) {
    return candidate as TryTarget;
  }
  return "Stepscope: Try this fix comes from a finding's or a rule's light bulb (Quick Fix…) in a trusted workspace.";
}
