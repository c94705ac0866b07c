// The trace panel's host: one webview panel per window showing one run, fed by the language server
// (`stepscope/report`, `stepscope/timeline`; never a trace), following the run the editor shows.
//
// - The page is panel/dist's bundle under a strict CSP with a fresh nonce (panel/src/html.ts); the
//   webview may load nothing but that folder, and runs no command URI and no form.
// - The context is not retained when the panel is hidden (a large run's state is tens of MB in the
//   webview): the webview sends `ready` each time its script starts, and the host posts the state
//   again. Opening a line puts its editor beside the panel, so the panel usually stays in view.
// - Every message from the webview goes through the shared validator (panel/src/messages.ts) and is
//   dropped, with one line in the log, when it does not match. `openSource` opens only a file of the
//   run's own file table that lies, really (symbolic links resolved), inside a workspace folder;
//   `shareTrace` runs Share Trace… (`openInPerfetto`: Open Trace in Perfetto…) on the run the panel
//   shows, no other.
// - Nothing here runs the user's code: the panel works in restricted mode.
import * as fs from "fs";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { makeNonce, panelHtml } from "../../../panel/src/html";
import { HostMessage, parseWebviewMessage } from "../../../panel/src/messages";
import type { PanelReport } from "../../../panel/src/report";
import { splitTimeline, type TimelineDoc } from "../../../panel/src/timeline-doc";
import { firstLine } from "../python";
import { isInside, resolveSource } from "./sources";
import type { MeasureResult } from "../../../panel/src/measure";
import type { RunComparison } from "../../../panel/src/comparison";
import { comparisonPanelState, measurePanelState, measureTabTitle, panelState, runRoot, tabTitle } from "./state";
import { parsePanelTarget, PanelTarget } from "./target";

export const OPEN_PANEL_COMMAND = "stepscope.openPanel";
const SHARE_TRACE_COMMAND = "stepscope.shareTrace";
const OPEN_IN_PERFETTO_COMMAND = "stepscope.openInPerfetto";
const VIEW_TYPE = "stepscope.tracePanel";
const REPORT_REQUEST = "stepscope/report";
const TIMELINE_REQUEST = "stepscope/timeline";
const RUNS_REQUEST = "stepscope/runs";
const MEASURE_REQUEST = "stepscope/measure";
const COMPARE_REQUEST = "stepscope/compareRuns";

type MeasureTarget = NonNullable<PanelTarget["measure"]>;

interface ShownRun {
  runId: string;
  /** what was asked for: the run, and for a measure run its comparison (one key per view) */
  key: string;
  report: PanelReport | null;
  /** a measure run's document (its distribution; with `against`, the comparison merged in) */
  measure: MeasureResult | null;
  /** two profile runs statement by statement (`runId` is B, the later one) */
  comparison?: RunComparison | null;
  timeline: TimelineDoc | null;
  /** why there is no timeline, shown in the panel */
  problem: string | null;
  stale: boolean;
  /** the line to bring into view, until another run is shown */
  reveal: { fileId: string; line: number } | null;
}

interface RangeRequest {
  runId: string;
  startUs: number;
  endUs: number;
  maxSpans: number;
}

export class TracePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: ShownRun | undefined;
  /** the run the editor shows (the profile whose labels it shows, or a run opened from the runs view) */
  private followed: { runId: string; measure: MeasureTarget | undefined } | undefined;
  /** the webview's script has started since the page was last (re)loaded */
  private ready = false;
  /** loads started: only the latest one is shown */
  private loads = 0;
  private nextRange: RangeRequest | undefined;
  private rangeBusy = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly dist: vscode.Uri,
    private readonly client: () => LanguageClient | undefined,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  register(): vscode.Disposable {
    this.disposables.push(vscode.commands.registerCommand(OPEN_PANEL_COMMAND, (arg?: unknown) => this.open(arg)));
    return new vscode.Disposable(() => this.dispose());
  }

  /** The editor shows this run now (`measure`: a measure run): an open panel follows it. A measure
   * run is followed only by a panel that shows a measure run: it never takes the place of the
   * profile whose labels the editor shows (its status item and "Open in Panel" lead to it). */
  follow(runId: string, measure = false): void {
    const target = measure ? { against: null, force: false } : undefined;
    if (measure && !this.shown?.measure) return;
    this.followed = { runId, measure: target };
    if (this.panel && this.shown?.key !== keyOf(runId, target)) {
      void this.load(runId, null, target);
    }
  }

  /** `stepscope.openPanel`: on the given run and line, else the run the editor shows, else the newest run. */
  async open(arg?: unknown): Promise<void> {
    const target = parsePanelTarget(arg);
    if (typeof target === "string") {
      void vscode.window.showErrorMessage(`Stepscope: ${target}.`);
      return;
    }
    if (target?.compare) {
      try {
        this.reveal();
      } catch (error) {
        void vscode.window.showErrorMessage(`Stepscope: the trace panel could not be opened: ${firstLine(error)}`);
        return;
      }
      await this.loadComparison(target.compare.against, target.runId);
      return;
    }
    const chosen = target ? { runId: target.runId, measure: target.measure } : this.followed ?? (await this.newestRun());
    if (!chosen) {
      void vscode.window.showInformationMessage(
        "Stepscope: no run to show yet. Profile a step first (Stepscope: Profile This Step), or run `stepscope profile` in a terminal.",
      );
      return;
    }
    try {
      this.reveal();
    } catch (error) {
      void vscode.window.showErrorMessage(`Stepscope: the trace panel could not be opened: ${firstLine(error)}`);
      return;
    }
    await this.load(chosen.runId, target?.line ?? null, chosen.measure);
  }

  dispose(): void {
    this.panel?.dispose();
    this.disposables.splice(0).forEach((d) => d.dispose());
  }

  private async newestRun(): Promise<{ runId: string; measure: MeasureTarget | undefined } | undefined> {
    const client = this.client();
    if (!client) return undefined;
    try {
      const answer = await client.sendRequest<{ runs?: { id?: unknown; analysed?: unknown; kind?: unknown; status?: unknown }[] }>(RUNS_REQUEST, {});
      const measured = (r: { kind?: unknown; status?: unknown }) => (r.kind === "measure" || r.kind === "try") && r.status === "complete";
      const run = (answer?.runs ?? []).find((r) => (r.analysed === true || measured(r)) && typeof r.id === "string");
      if (!run) return undefined;
      return { runId: run.id as string, measure: measured(run) ? { against: null, force: false } : undefined };
    } catch (error) {
      this.log.warn(`Trace panel: could not list the runs: ${firstLine(error)}`);
      return undefined;
    }
  }

  /** Shows the panel, creating it beside the editor the first time. */
  private reveal(): void {
    if (this.panel) {
      this.panel.reveal(undefined, false);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      "Stepscope Trace",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
      {
        enableScripts: true,
        enableCommandUris: false,
        enableForms: false,
        localResourceRoots: [this.dist],
        retainContextWhenHidden: false,
      },
    );
    this.panel = panel;
    this.ready = false;
    const webview = panel.webview;
    try {
      webview.html = panelHtml({
        cspSource: webview.cspSource,
        nonce: makeNonce(),
        scripts: [webview.asWebviewUri(vscode.Uri.joinPath(this.dist, "panel.js")).toString()],
        style: webview.asWebviewUri(vscode.Uri.joinPath(this.dist, "panel.css")).toString(),
        title: "Stepscope trace",
      });
    } catch (error) {
      // a page without its policy is never served
      this.log.error(`Trace panel: the page could not be made (${firstLine(error)}; the webview's sources: ${webview.cspSource}).`);
      panel.dispose();
      this.panel = undefined;
      throw error;
    }
    const listeners = [
      webview.onDidReceiveMessage((message) => this.receive(message)),
      // a hidden webview is torn down (its context is not retained): it says `ready` again when shown
      panel.onDidChangeViewState(() => {
        if (!panel.visible) this.ready = false;
      }),
    ];
    panel.onDidDispose(() => {
      listeners.forEach((l) => l.dispose());
      this.panel = undefined;
      this.shown = undefined;  // its state is let go with the panel
      this.ready = false;
      this.nextRange = undefined;
    });
  }

  /** Reads the run's report and timeline (a measure run: its measure document) from the server and
   * shows them (the latest load wins). */
  private async load(runId: string, line: ShownRun["reveal"], measure?: MeasureTarget): Promise<void> {
    const load = ++this.loads;
    const key = keyOf(runId, measure);
    if (this.shown?.key === key) {
      this.shown.reveal = line ?? this.shown.reveal;
      if (line) this.post({ type: "reveal", runId, fileId: line.fileId, line: line.line });
      return;
    }
    const client = this.client();
    if (!client) {
      void vscode.window.showErrorMessage("Stepscope: the server is not running, so the trace panel has nothing to show.");
      return;
    }
    if (measure) {
      await this.loadMeasure(client, load, runId, measure);
      return;
    }
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `Stepscope: loading run ${runId}` },
      async () => {
        let report: PanelReport;
        try {
          report = await client.sendRequest<PanelReport>(REPORT_REQUEST, { runId });
        } catch (error) {
          this.refused(load, error);  // an empty panel would only say the same
          return;
        }
        let timeline: TimelineDoc | null = null;
        let problem: string | null = null;
        try {
          timeline = await client.sendRequest<TimelineDoc>(TIMELINE_REQUEST, { runId });
        } catch (error) {
          problem = `No timeline for this run: ${firstLine(error)}`;
          this.log.warn(`Trace panel: ${problem}`);
        }
        if (load !== this.loads || !this.panel) return;  // a later load, or the panel closed meanwhile
        this.shown = { runId, key, report, measure: null, timeline, problem, stale: false, reveal: line };
        this.nextRange = undefined;
        this.panel.title = tabTitle(report);
        const spans = timeline ? `${timeline.spans.start_us.length} spans` : "no timeline";
        this.log.info(`Trace panel: run ${runId} (${report.lines.length} lines, ${spans}).`);
        this.postState();
      },
    );
  }

  /** The server refused a load: said in one line, unless a later load took its place; a panel that
   * had nothing to show yet closes. */
  private refused(load: number, error: unknown): void {
    if (load !== this.loads) return;
    const reason = firstLine(error);
    this.log.error(`Trace panel: ${reason}`);
    void vscode.window.showErrorMessage(`Stepscope: ${reason}`);
    if (!this.shown) this.panel?.dispose();
  }

  /** A measure run's document (with `against`: compared with that run, by the server's comparison). */
  private async loadMeasure(client: LanguageClient, load: number, runId: string, measure: MeasureTarget): Promise<void> {
    const what = measure.against ? `run ${runId} against run ${measure.against}` : `run ${runId}`;
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Stepscope: loading ${what}` }, async () => {
      let doc: MeasureResult;
      try {
        doc = await client.sendRequest<MeasureResult>(MEASURE_REQUEST, {
          runId, ...(measure.against ? { against: measure.against, force: measure.force } : {}),
        });
      } catch (error) {
        this.refused(load, error);
        return;
      }
      if (load !== this.loads || !this.panel) return;
      this.shown = { runId, key: keyOf(runId, measure), report: null, measure: doc, timeline: null, problem: null, stale: false, reveal: null };
      this.nextRange = undefined;
      this.panel.title = measureTabTitle(doc);
      this.log.info(`Trace panel: ${what} (${Array.isArray(doc.raw_ms) ? doc.raw_ms.length : 0} measured passes).`);
      this.postState();
    });
  }

  /** Two profile runs statement by statement (`stepscope/compareRuns`: the statements of `stepscope runs
   * compare`, matched by their code), as a view of the panel. */
  private async loadComparison(a: string, b: string): Promise<void> {
    const load = ++this.loads;
    const client = this.client();
    if (!client) {
      void vscode.window.showErrorMessage("Stepscope: the server is not running, so the trace panel has nothing to show.");
      return;
    }
    let statements: RunComparison | undefined;
    try {
      statements = (await client.sendRequest<{ statements?: RunComparison }>(COMPARE_REQUEST, { a, b }))?.statements;
    } catch (error) {
      this.refused(load, error);
      return;
    }
    if (load !== this.loads || !this.panel) return;
    if (!statements) {
      void vscode.window.showErrorMessage("Stepscope: the server gave no statements to compare.");
      return;
    }
    this.shown = { runId: b, key: `${a}..${b}:statements`, report: null, measure: null, comparison: statements, timeline: null,
      problem: null, stale: false, reveal: null };
    this.nextRange = undefined;
    this.panel.title = "Compare: statements";
    this.log.info(`Trace panel: run ${a} against run ${b} (${Array.isArray(statements.lines) ? statements.lines.length : 0} statements).`);
    this.postState();
  }

  private postState(): void {
    const shown = this.shown;
    if (!shown || !this.ready) return;  // posted when the webview says it is ready
    const state = shown.comparison ? comparisonPanelState(shown.comparison)
      : shown.measure ? measurePanelState({ runId: shown.runId, measure: shown.measure })
      : panelState({ runId: shown.runId, report: shown.report!, timeline: shown.timeline, stale: shown.stale });
    // the span columns in a message of their own, as typed arrays (timeline-doc.ts, splitTimeline)
    const split = state.timeline ? splitTimeline(state.timeline) : null;
    this.post({ type: "state", state: split ? { ...state, timeline: split.rest } : state });
    if (split) this.post({ type: "spans", runId: shown.runId, of: "state", spans: split.spans });
    if (shown.problem) this.post({ type: "error", message: shown.problem });
    if (shown.reveal) this.post({ type: "reveal", runId: shown.runId, ...shown.reveal });
  }

  private post(message: HostMessage): void {
    if (this.panel && this.ready) void this.panel.webview.postMessage(message);
  }

  private receive(raw: unknown): void {
    const parsed = parseWebviewMessage(raw);
    if (!parsed.ok) {
      this.log.warn(`Trace panel: refused a message from the panel: ${parsed.reason}`);
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case "ready":
        this.ready = true;
        this.postState();
        break;
      case "openSource":
        void this.openSource(message.fileId, message.line);
        break;
      case "requestRange":
        if (this.shown && message.runId === this.shown.runId) {
          this.nextRange = message;  // only the latest range asked for is worth computing
          void this.serveRanges();
        }
        break;
      case "shareTrace":
      case "openInPerfetto":
        // only the run the panel shows: a message cannot make the host act on another one
        if (this.shown && message.runId === this.shown.runId) {
          void vscode.commands.executeCommand(
            message.type === "shareTrace" ? SHARE_TRACE_COMMAND : OPEN_IN_PERFETTO_COMMAND, message.runId);
        } else {
          this.log.warn(`Trace panel: not acting on run ${message.runId} (${message.type}): the panel does not show it.`);
        }
        break;
      case "log":
        if (message.level === "error") this.log.error(`Trace panel: ${message.message}`);
        else this.log.info(`Trace panel: ${message.message}`);
        break;
    }
  }

  /** Finer levels of ranges, one request at a time. */
  private async serveRanges(): Promise<void> {
    if (this.rangeBusy) return;
    this.rangeBusy = true;
    try {
      while (this.nextRange) {
        const { runId, startUs, endUs, maxSpans } = this.nextRange;
        this.nextRange = undefined;
        const client = this.client();
        if (!client) return;
        try {
          const timeline = await client.sendRequest<TimelineDoc>(TIMELINE_REQUEST, { runId, startUs, endUs, maxSpans });
          if (this.shown?.runId === runId) {
            const split = splitTimeline(timeline);
            this.post({ type: "range", runId, timeline: split ? split.rest : timeline });
            if (split) this.post({ type: "spans", runId, of: "range", spans: split.spans });
          }
        } catch (error) {
          const reason = `A finer level of the timeline could not be made: ${firstLine(error)}`;
          this.log.warn(`Trace panel: ${reason}`);
          if (this.shown?.runId === runId) this.post({ type: "error", message: reason });
        }
      }
    } finally {
      this.rangeBusy = false;
    }
  }

  /** Opens a line the panel asked for, only inside the workspace; anything else is one line in the log. */
  private async openSource(fileId: string, line: number): Promise<void> {
    const shown = this.shown;
    if (!shown) return;
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
    const resolved = resolveSource(fileId, shown.timeline?.files ?? {}, shown.report ? runRoot(shown.report) : null, folders);
    const refuse = (why: string) => this.log.warn(`Trace panel: not opening ${fileId}:${line}: ${why}.`);
    if ("refused" in resolved) {
      refuse(resolved.refused);
      return;
    }
    let real: string;
    try {
      real = fs.realpathSync(resolved.path);
    } catch {
      refuse(`${resolved.path} does not exist (deleted or moved since the run?)`);
      return;
    }
    if (!folders.some((folder) => isInside(real, safeRealpath(folder)))) {
      refuse(`${resolved.path} leads outside the workspace (${real})`);
      return;
    }
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(resolved.path));
      const at = Math.min(line, document.lineCount) - 1;
      const position = new vscode.Position(at, document.lineAt(at).firstNonWhitespaceCharacterIndex);
      const editor = await vscode.window.showTextDocument(document, {
        viewColumn: this.sourceColumn(),
        preserveFocus: false,
        selection: new vscode.Range(position, position),
      });
      editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    } catch (error) {
      refuse(firstLine(error));
    }
  }

  /** An editor group other than the panel's (the one the user last worked in), else a new one beside it. */
  private sourceColumn(): vscode.ViewColumn {
    const own = this.panel?.viewColumn;
    const other = vscode.window.visibleTextEditors.find((e) => e.viewColumn !== undefined && e.viewColumn !== own);
    return other?.viewColumn ?? vscode.ViewColumn.Beside;
  }
}

function keyOf(runId: string, measure: MeasureTarget | undefined): string {
  if (!measure) return runId;
  return measure.against ? `${runId}..${measure.against}${measure.force ? "!" : ""}` : `${runId}:measure`;
}

function safeRealpath(folder: string): string {
  try {
    return fs.realpathSync(folder);
  } catch {
    return folder;
  }
}
