"""The tools of `stepscope mcp` and the rules they keep.

Tools: `profile`, `measure`, `try_fix` run the user's program (each is `stepscope profile`,
`measure`, `try` in a child process, cli_child.py); `analyze` reads a trace (`stepscope analyze`
in a child: the server never loads the trace engine); `check` runs the static rules in this
process (pure, no torch); `runs` reads the history (`stepscope runs` in a child).

Invariants:
- `profile`, `measure` and `try_fix` are refused with a tool error unless the server was started
  with `allow_run` (`--allow-run`): they run the user's step for real (optimizer updates, writes).
  Their descriptions and their results say so.
- Nothing a tool does writes outside the workspace's `.stepscope/`: run folders, the history, a
  revision's checkout (`measure against`) and a try's scratch copy all live there; no tool takes
  an output path, and `try_fix` never applies a change to the user's files.
- A script or patch a tool names lies inside the workspace; a path outside it is a tool error.
- An argument is never read as another flag of the command: values go as `--flag=value`, and a
  run id or target that starts with `-` is refused.
- Every failure the user can cause (a bad argument, a missing file, a command that fails) is a
  tool error (`is_error`) with the command's one-line reason, never a crash of the server.
- Each result is a text summary (summaries.py, the presenters' words) and a structured document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .. import __version__
from ..commands.progress import parse as parse_progress
from . import summaries
from .cli_child import Outcome, run_command

REAL_RUN_WORDS = ("The step runs for real: it performs real updates (optimizer steps, writes); run it on an "
                  "experimental state, never on weights you must keep. The program sees STEPSCOPE_RUN=1.")
REFUSED_WORDS = ("refused: `{tool}` runs your program, and this server was started without --allow-run "
                 "(start it as `stepscope mcp --allow-run` to let it run your code)")

INSTRUCTIONS = (
    "Stepscope profiles a PyTorch training or inference step line by line. A profiled ms/step is "
    "distorted by the profiler: quote the step's ms/step without the profiler (`ms_per_step.unprofiled`, "
    "or `measure`) as its speed, and the profiled figure only as profiled. A comparison's outcome is "
    "its verdict words (faster, slower, no difference larger than the margin, inconclusive), never a bare "
    "ratio.")

ProgramArgs = Annotated[list[str], Field(description="arguments passed to the program (after `--`)")]
Line = Annotated[int | None, Field(ge=1, description="a line of the step loop (or inside it)")]
Function = Annotated[str | None, Field(description="each call of this function is a step: NAME, Class.method, "
                                                  "module:qualname or path.py:qualname")]
Timeout = Annotated[float | None, Field(gt=0, description="stop the program after this many seconds")]


def flags(*pairs: tuple[str, Any]) -> list[str]:
    """`--name=value` for each pair whose value is given: the `=` keeps a value that starts with
    `-` a value, never another flag of the command."""
    return [f"{name}={value}" for name, value in pairs if value is not None]


def not_a_flag(word: str, what: str) -> str:
    """A positional word of a command, refused where the command would read it as a flag
    (`--apply`, `--root=...`)."""
    if word.startswith("-"):
        raise ToolError(f"{what} cannot start with '-': {word}")
    return word


def build_server(root: Path, *, allow_run: bool) -> MCPServer:
    """The server for the workspace `root`; `allow_run` lets the tools that run code run it."""
    root = root.resolve()
    server = MCPServer(name="stepscope", version=__version__, instructions=INSTRUCTIONS)
    # the program's step runs for real: it may write (checkpoints, logs) as it does when you run it
    runs_code = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    reads_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def refuse_unless_allowed(tool: str) -> None:
        if not allow_run:
            raise ToolError(REFUSED_WORDS.format(tool=tool))

    def in_workspace(path: str, what: str) -> Path:
        resolved = (root / path).resolve()
        if resolved != root and root not in resolved.parents:
            raise ToolError(f"{what} must lie inside the workspace {root}: {path}")
        if not resolved.exists():
            raise ToolError(f"no such {what}: {path}")
        return resolved

    def step_words(script: str, line: int | None, function: str | None) -> list[str]:
        if line is not None and function is not None:
            raise ToolError("give `line` or `function`, not both")
        return [str(in_workspace(script, "script")), *flags(("--line", line), ("--function", function))]

    def failed(outcome: Outcome) -> ToolError:
        return ToolError(outcome.reason)

    def progress(ctx: Context):
        """The command's progress lines (each step or pass begun, with the total: `--progress`) as MCP
        progress, for a client that asked for it. Its notes are not progress (MCP wants each progress
        value above the last): the result carries them."""

        async def report(line: str) -> None:
            counted = parse_progress(line)
            if counted is not None:
                done, total, what = counted
                await ctx.report_progress(done, total, message=what)

        return report

    def result(text: str, structured: dict[str, Any]) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)

    @server.tool(annotations=runs_code, description=(
        "Profile a step of a Python script under torch.profiler: ms/step without the profiler (timed after the "
        "window) and with it, the distortion, the top lines, the findings with their next checks, and the run "
        "id. Needs `--allow-run`. " + REAL_RUN_WORDS))
    async def profile(script: Annotated[str, Field(description="the file that holds the step, workspace-relative")],
                      line: Line = None, function: Function = None, args: ProgramArgs = [],  # noqa: B006
                      active: Annotated[int | None, Field(ge=1, description="steps recorded (default 5)")] = None,
                      timeout_s: Timeout = None, ctx: Context = None) -> CallToolResult:
        refuse_unless_allowed("profile")
        words = ["profile", "--progress", *step_words(script, line, function),
                 *flags(("--active", active), ("--timeout", timeout_s))]
        outcome = await run_command(words, cwd=root, program_args=args, on_line=progress(ctx))
        if not isinstance(outcome.document, dict):
            raise failed(outcome)
        text, structured = summaries.profile_result(outcome.document, root, notes=outcome.notes)
        if outcome.exit_code != 0:
            text += f"\nthe run ended early: {outcome.reason}"
        return result(text + "\n" + REAL_RUN_WORDS, structured)

    @server.tool(annotations=runs_code, description=(
        "Time a step without the profiler over many passes: median ms/step, spread, and, with `against` (a git "
        "revision such as HEAD) or `compare` (a recorded run), a verdict from alternating processes. Needs "
        "`--allow-run`. " + REAL_RUN_WORDS))
    async def measure(script: Annotated[str, Field(description="the file that holds the step, workspace-relative")],
                      line: Line = None, function: Function = None, args: ProgramArgs = [],  # noqa: B006
                      against: Annotated[str | None, Field(description="git revision to compare with, e.g. HEAD")] = None,
                      compare: Annotated[str | None, Field(description="a recorded run to compare with")] = None,
                      passes: Annotated[int | None, Field(ge=1, description="passes timed per process (default 30)")] = None,
                      warmup: Annotated[int | None, Field(ge=0, description="passes run first, in no figure (default 5)")] = None,
                      processes: Annotated[int | None, Field(ge=1, description="processes per side (`--runs`)")] = None,
                      timeout_s: Timeout = None, ctx: Context = None) -> CallToolResult:
        refuse_unless_allowed("measure")
        if against is not None and compare is not None:
            raise ToolError("give `against` or `compare`, not both")
        words = ["measure", "--progress", *step_words(script, line, function),
                 *flags(("--against", against), ("--compare", compare), ("--passes", passes), ("--warmup", warmup),
                        ("--runs", processes), ("--timeout", timeout_s))]
        outcome = await run_command(words, cwd=root, program_args=args, on_line=progress(ctx))
        if not isinstance(outcome.document, dict):
            raise failed(outcome)
        text, structured = summaries.measure_result(outcome.document, notes=outcome.notes)
        return result(text + "\n" + REAL_RUN_WORDS, structured)

    @server.tool(name="try_fix", annotations=runs_code, description=(
        "Measure a change before making it (`stepscope try`): a finding's variants (`target`: a profile run id, "
        "and `finding`), a quick fix (`target`: the script, and `fix`, e.g. SS101@75) or a patch file (`target`: "
        "the script, and `patch`), on a scratch copy "
        "under .stepscope/, against the code as it is; a verdict and the values check per change. Never "
        "writes the change into your files. Needs `--allow-run`. " + REAL_RUN_WORDS))
    async def try_fix(target: Annotated[str, Field(description="a profile run id (with `finding`) or the script")],
                      finding: Annotated[str | None, Field(description="KIND[@FILE:LINE] of the run's findings")] = None,
                      fix: Annotated[str | None, Field(description="CODE@[FILE:]LINE, a quick fix of `check`")] = None,
                      patch: Annotated[str | None, Field(description="a unified diff file, workspace-relative")] = None,
                      variant: Annotated[list[str], Field(description="with `finding`: only these variants")] = [],  # noqa: B006
                      args: ProgramArgs = [],  # noqa: B006
                      passes: Annotated[int | None, Field(ge=1, description="passes timed per process")] = None,
                      processes: Annotated[int | None, Field(ge=1, description="processes per side (`--runs`)")] = None,
                      timeout_s: Timeout = None, ctx: Context = None) -> CallToolResult:
        refuse_unless_allowed("try_fix")
        if sum(x is not None for x in (finding, fix, patch)) != 1:
            raise ToolError("give exactly one of `finding`, `fix` or `patch`")
        words = ["try", "--progress",
                 not_a_flag(target, "target") if finding is not None else str(in_workspace(target, "script")),
                 *flags(("--finding", finding), ("--fix", fix),
                        ("--patch", str(in_workspace(patch, "patch")) if patch is not None else None),
                        *(("--variant", name) for name in variant),
                        ("--passes", passes), ("--runs", processes), ("--timeout", timeout_s))]
        outcome = await run_command(words, cwd=root, program_args=args, on_line=progress(ctx))
        if not isinstance(outcome.document, dict):
            raise failed(outcome)
        text, structured = summaries.try_result(outcome.document, notes=outcome.notes)
        return result(text + "\n" + REAL_RUN_WORDS, structured)

    @server.tool(annotations=reads_only, description=(
        "Analyse an existing profiler trace (.json, .json.gz, a run folder or a folder of per-rank traces): "
        "ms/step, top lines, findings with their next checks. Reads only."))
    async def analyze(trace: Annotated[str, Field(description="the trace or folder, absolute or workspace-relative")],
                      source_root: Annotated[str | None, Field(description="folder the trace's source paths are "
                                                                           "relative to")] = None) -> CallToolResult:
        path = (root / trace).resolve()
        if not path.exists():
            raise ToolError(f"no such trace: {trace}")
        words = ["analyze", str(path),
                 *flags(("--source-root", str((root / source_root).resolve()) if source_root is not None else None))]
        outcome = await run_command(words, cwd=root)
        if outcome.exit_code != 0 or not isinstance(outcome.document, dict):
            raise failed(outcome)
        # a run of this workspace's history is named by its id; any other trace or folder by its path
        run_dir = path if path.parent == root / ".stepscope" / "runs" else None
        text, structured = summaries.profile_result(outcome.document, root, run_dir=run_dir, notes=outcome.notes)
        return result(text, structured)

    @server.tool(annotations=reads_only, description=(
        "Static checks for measurement and instrumentation mistakes (`stepscope check`): diagnostics with their "
        "codes, lines and quick fixes. Reads only; needs no torch."))
    def check(paths: Annotated[list[str], Field(min_length=1, description="files or folders, workspace-relative")],
              select: Annotated[list[str] | None, Field(description="codes or prefixes to run")] = None,
              ignore: Annotated[list[str] | None, Field(description="codes or prefixes to skip")] = None
              ) -> CallToolResult:
        from ..jsonio import loads
        from ..rules import PathNotFound, check_files
        from ..rules.config import validate_codes
        from ..rules.output import render_json

        wanted = {name: tuple(c.strip().upper() for c in codes if c.strip()) for name, codes in
                  (("select", select or ()), ("ignore", ignore or ()))}
        for name, codes in wanted.items():
            unknown = validate_codes(codes)
            if unknown:  # as `stepscope check --select` refuses them, rather than checking nothing
                raise ToolError(f"{name}: unknown rule code or prefix: {', '.join(unknown)}")
        try:
            checked = check_files([str((root / p).resolve()) for p in paths],
                                  cli_select=wanted["select"] or None, cli_ignore=wanted["ignore"])
        except PathNotFound as e:
            raise ToolError(str(e)) from None
        doc = loads(render_json(checked.diagnostics, checked.errors, checked.files_checked))
        doc["warnings"] = list(checked.warnings)
        text, structured = summaries.check_result(doc)
        return result(text, structured)

    @server.tool(annotations=reads_only, description=(
        "The history of profile, measure and try runs (.stepscope/, the CLI's too): `list` (newest first), "
        "`show` one run, `compare` two (a verdict for measure runs; two profile runs statement by statement)."))
    async def runs(action: Literal["list", "show", "compare"] = "list",
                   run_ids: Annotated[list[str], Field(description="show: one run; compare: baseline, candidate")] = [],  # noqa: B006
                   kind: Literal["profile", "measure", "try"] | None = None,
                   limit: Annotated[int | None, Field(ge=1)] = None) -> CallToolResult:
        wanted = {"list": 0, "show": 1, "compare": 2}[action]
        if len(run_ids) != wanted:
            raise ToolError(f"`{action}` takes {wanted} run id(s), got {len(run_ids)}")
        words = ["runs", action, *(not_a_flag(r, "run id") for r in run_ids),
                 *flags(("--root", str(root)), ("--kind", kind), ("--limit", limit))]
        outcome = await run_command(words, cwd=root)
        if outcome.exit_code != 0 or not isinstance(outcome.document, dict):
            raise failed(outcome)
        if action == "list":
            text, structured = summaries.runs_list_result(outcome.document)
        elif action == "show":
            text, structured = summaries.runs_show_result(outcome.document)
        else:
            text, structured = summaries.runs_compare_result(outcome.document, root)
        return result(text, structured)

    return server


def serve_stdio(root: Path, *, allow_run: bool) -> None:
    """Serve the tools over stdin/stdout until the client closes them."""
    build_server(root, allow_run=allow_run).run("stdio")
