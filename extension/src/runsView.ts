// The runs view (Stepscope › Runs): every run of the workspace from the server (`stepscope/runs`:
// the run folders, and runs made by the CLI or before a restart alike), newest first, profile and
// measure runs alike. Open a run (its figures in the editor), open its report, compare two runs (two
// profile runs statement by statement, matched by their code, in the trace panel; with a measure run,
// the verdict of `stepscope runs compare`, refused across machines or scopes unless the user says
// compare anyway), open a run's log (a failed run's click: the server's `stepscope/runLog` text, how
// it ended, where its program raised and the end of its program.log, shown read-only), delete one (confirmed; the server deletes only folders inside .stepscope/runs/).
// Viewing works in restricted mode: nothing here runs the user's code. A run opens in the trace panel
// through the panel's own command (`stepscope.openPanel` {runId}; a measure run's distribution with
// {runId, kind: "measure"}, two measure runs compared with {runId, kind: "measure", against, force},
// two profile runs with {runId, kind: "compare", against}), as a hover's link does.
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { OPEN_PANEL_COMMAND } from "./panel/host";
import { firstLine } from "./python";
import { parseRuns, RunSummary, timedRun } from "./result";
import { runItem } from "./runsTree";

export const REPORT_SCHEME = "stepscope-run";
const RUNS_REQUEST = "stepscope/runs";
const REPORT_REQUEST = "stepscope/report";
const SHOW_RUN_REQUEST = "stepscope/showRun";
const COMPARE_REQUEST = "stepscope/compareRuns";
const DELETE_REQUEST = "stepscope/deleteRun";
const RUN_LOG_REQUEST = "stepscope/runLog";

class RunNode extends vscode.TreeItem {
  constructor(readonly run: RunSummary) {
    const item = runItem(run);
    super(item.label, vscode.TreeItemCollapsibleState.None);
    this.id = run.id;
    this.description = item.description;
    const tooltip = new vscode.MarkdownString(item.tooltip);
    tooltip.isTrusted = false;
    tooltip.supportHtml = false;
    this.tooltip = tooltip;
    this.iconPath = new vscode.ThemeIcon(item.icon);
    this.contextValue = item.contextValue;
    if (run.analysed) {
      this.command = { command: "stepscope.runs.open", title: "Show Run in the Editor", arguments: [this] };
    } else if (item.contextValue === "run.measured") {
      this.command = { command: "stepscope.runs.openPanel", title: "Open Run in the Trace Panel", arguments: [this] };
    } else if (item.opensLog) {
      this.command = { command: "stepscope.runs.openLog", title: "Open Run Log", arguments: [this] };
    }
  }
}

/** Read-only documents of runs: `stepscope-run:/<run id>/report.json`, `stepscope-run:/<run id>/program.log`,
 * `stepscope-run:/<a>..<b>/compare.md`. */
class RunDocuments implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly client: () => LanguageClient | undefined) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const client = this.client();
    if (!client) {
      return "Stepscope's server is not running.";
    }
    const [id, name] = uri.path.replace(/^\//, "").split("/");
    try {
      if (name === "compare.md") {
        const [a, b] = id.split("..");
        const force = uri.query === "force";  // the user chose to compare runs that differ in machine or scope
        const answer = await client.sendRequest<{ markdown?: unknown }>(COMPARE_REQUEST, { a, b, ...(force ? { force } : {}) });
        return typeof answer?.markdown === "string" ? answer.markdown : "The server gave no comparison.";
      }
      if (name === "program.log") {
        const answer = await client.sendRequest<{ text?: unknown }>(RUN_LOG_REQUEST, { runId: id });
        return typeof answer?.text === "string" ? answer.text : "The server gave no log.";
      }
      return JSON.stringify(await client.sendRequest(REPORT_REQUEST, { runId: id }), null, 2) + "\n";
    } catch (error) {
      return `Stepscope could not read run ${id}: ${firstLine(error)}\n`;
    }
  }

  refresh(uri: vscode.Uri): void {
    this.changed.fire(uri);
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export class RunsView implements vscode.TreeDataProvider<RunNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly documents: RunDocuments;
  private view: vscode.TreeView<RunNode> | undefined;

  constructor(
    private readonly client: () => LanguageClient | undefined,
    private readonly log: vscode.LogOutputChannel,
    private readonly onShown: (result: unknown) => void,
    private readonly onDeleted: (runIds: string[]) => void,
  ) {
    this.documents = new RunDocuments(client);
  }

  register(): vscode.Disposable {
    this.view = vscode.window.createTreeView("stepscope.runs", { treeDataProvider: this, canSelectMany: true });
    this.disposables.push(
      this.view,
      this.changed,
      this.documents,
      vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this.documents),
      vscode.commands.registerCommand("stepscope.runs.refresh", () => this.refresh()),
      vscode.commands.registerCommand("stepscope.runs.open", (node?: RunNode) => this.open(node)),
      vscode.commands.registerCommand("stepscope.runs.openReport", (node?: RunNode) => this.openReport(node?.run.id)),
      vscode.commands.registerCommand("stepscope.runs.openLog", (node?: RunNode) => this.openLog(node?.run.id)),
      vscode.commands.registerCommand("stepscope.runs.compare", (node?: RunNode, selected?: RunNode[]) =>
        this.compare(node, selected)),
      vscode.commands.registerCommand("stepscope.runs.delete", (node?: RunNode, selected?: RunNode[]) =>
        this.delete(node, selected)),
      vscode.commands.registerCommand("stepscope.runs.openPanel", (node?: RunNode) =>
        node && vscode.commands.executeCommand(OPEN_PANEL_COMMAND,
          timedRun(node.run.kind) ? { runId: node.run.id, kind: "measure" } : { runId: node.run.id })),
    );
    return new vscode.Disposable(() => this.dispose());
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: RunNode): vscode.TreeItem {
    return node;
  }

  async getChildren(node?: RunNode): Promise<RunNode[]> {
    const client = this.client();
    if (node || !client) {
      return [];
    }
    try {
      return parseRuns(await client.sendRequest(RUNS_REQUEST, {})).map((run) => new RunNode(run));
    } catch (error) {
      this.log.error(`Could not list the runs: ${firstLine(error)}`);
      return [];
    }
  }

  dispose(): void {
    this.disposables.splice(0).forEach((d) => d.dispose());
  }

  private async open(node?: RunNode): Promise<void> {
    const client = this.client();
    if (!node || !client) {
      return;
    }
    try {
      this.onShown(await client.sendRequest(SHOW_RUN_REQUEST, { runId: node.run.id }));
      if (node.run.script) {
        const folder = vscode.workspace.workspaceFolders?.find((f) => node.run.folder.startsWith(f.uri.fsPath));
        if (folder) {
          const script = vscode.Uri.joinPath(folder.uri, node.run.script);
          const editor = await vscode.window.showTextDocument(script, { preview: true });
          if (node.run.stepLine !== null) {
            const at = new vscode.Position(Math.max(0, node.run.stepLine - 1), 0);
            editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
          }
        }
      }
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: ${firstLine(error)}`);
    }
  }

  private async openReport(runId?: string): Promise<void> {
    if (!runId) {
      return;
    }
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${runId}/report.json` });
    const document = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), "json");
    await vscode.window.showTextDocument(document, { preview: true });
  }

  private async openLog(runId?: string): Promise<void> {
    if (!runId) {
      return;
    }
    // read again on each open: a run listed while it was still going has ended since
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${runId}/program.log` });
    this.documents.refresh(uri);
    await vscode.window.showTextDocument(uri, { preview: true });
  }

  private async compare(node?: RunNode, selected?: RunNode[]): Promise<void> {
    const comparable = (n: RunNode) => n.run.analysed || n.contextValue === "run.measured";
    let pair = (selected ?? []).filter(comparable);
    if (pair.length !== 2 && !node) {
      // from the command palette: the user names the first run here, the second below
      if (!this.client()) {
        void vscode.window.showErrorMessage("Stepscope: the server is not running, so there are no runs to compare.");
        return;
      }
      const runs = (await this.getChildren()).filter(comparable);
      if (runs.length < 2) {
        void vscode.window.showInformationMessage("Stepscope: comparing needs two analysed or measured runs; this workspace has "
          + `${runs.length === 0 ? "none" : "one"}.`);
        return;
      }
      const first = await vscode.window.showQuickPick(
        runs.map((n) => ({ label: String(n.label), description: String(n.description ?? ""), node: n })),
        { title: "Compare runs: the first run…" },
      );
      if (!first) {
        return;
      }
      node = first.node;
    }
    if (pair.length !== 2 && node) {
      const others = (await this.getChildren()).filter((n) => comparable(n) && n.run.id !== node.run.id);
      if (others.length === 0) {
        void vscode.window.showInformationMessage("Stepscope: there is no other analysed or measured run to compare with.");
        return;
      }
      const choice = await vscode.window.showQuickPick(
        others.map((n) => ({ label: String(n.label), description: String(n.description ?? ""), node: n })),
        { title: `Compare ${node.label} with…` },
      );
      if (!choice) {
        return;
      }
      pair = [node, choice.node];
    }
    if (pair.length !== 2) {
      void vscode.window.showInformationMessage("Stepscope: select two analysed or measured runs to compare.");
      return;
    }
    pair.sort((x, y) => (x.run.id < y.run.id ? -1 : 1));  // older first, the baseline: run ids start with their time
    const [a, b] = pair.map((n) => n.run.id);
    let force = false;
    if (pair.some((n) => timedRun(n.run.kind))) {
      const verdict = await this.verdict(a, b);
      if (verdict === undefined) return;
      force = verdict.force;
      if (pair.every((n) => timedRun(n.run.kind))) {
        // both distributions, the ratio of medians, its interval and the verdict: in the panel
        await vscode.commands.executeCommand(OPEN_PANEL_COMMAND, { runId: b, kind: "measure", against: a, force });
        return;
      }
    }
    if (pair.every((n) => !timedRun(n.run.kind))) {
      // two profile runs statement by statement, matched by their code: a view of the panel
      await vscode.commands.executeCommand(OPEN_PANEL_COMMAND, { runId: b, kind: "compare", against: a });
      return;
    }
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${a}..${b}/compare.md`, query: force ? "force" : "" });
    await vscode.commands.executeCommand("markdown.showPreview", uri).then(undefined, async () => {
      await vscode.window.showTextDocument(uri, { preview: true });
    });
  }

  /** Whether a comparison with a measure run can be made: the server's verdict (the same comparison as
   * `stepscope runs compare`), or its refusal in one line with the choice to compare anyway.
   * undefined: not compared. */
  private async verdict(a: string, b: string): Promise<{ force: boolean } | undefined> {
    const client = this.client();
    if (!client) return undefined;
    try {
      await client.sendRequest(COMPARE_REQUEST, { a, b });
      return { force: false };
    } catch (error) {
      const reason = firstLine(error);
      if (!/^not comparable/.test(reason)) {
        void vscode.window.showErrorMessage(`Stepscope: ${reason}`);
        return undefined;
      }
      const choice = await vscode.window.showWarningMessage(`Stepscope: ${reason}.`, "Compare Anyway");
      return choice === "Compare Anyway" ? { force: true } : undefined;
    }
  }

  private async delete(node?: RunNode, selected?: RunNode[]): Promise<void> {
    const client = this.client();
    const nodes = selected && selected.length > 0 ? selected : node ? [node] : [];
    if (!client || nodes.length === 0) {
      return;
    }
    const what = nodes.length === 1 ? `run ${nodes[0].run.id}` : `${nodes.length} runs`;
    const choice = await vscode.window.showWarningMessage(
      `Delete ${what}? Its folder in .stepscope/runs (trace, report, log) is removed for good.`,
      { modal: true },
      "Delete",
    );
    if (choice !== "Delete") {
      return;
    }
    const deleted: string[] = [];
    for (const n of nodes) {
      try {
        await client.sendRequest(DELETE_REQUEST, { runId: n.run.id });
        this.log.info(`Deleted run ${n.run.id}.`);
        deleted.push(n.run.id);
      } catch (error) {
        void vscode.window.showErrorMessage(`Stepscope: ${firstLine(error)}`);
      }
    }
    this.onDeleted(deleted);
    this.refresh();
  }
}
