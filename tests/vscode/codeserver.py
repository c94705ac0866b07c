"""A real VS Code (code-server) with the built Stepscope .vsix installed, isolated per test.

Each instance gets its own HOME, TMPDIR, user-data and extensions folders under the test's
temporary directory and runs in its own process group, so stopping it leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("STEPSCOPE_TOOLS", REPO / ".cache" / "tools"))
NODE_BIN = TOOLS / "node24" / "node_modules" / ".bin"
NODE = NODE_BIN / "node"
CODE_SERVER = TOOLS / "cs" / "node_modules" / ".bin" / "code-server"
PLAYWRIGHT_CORE = TOOLS / "drivers" / "node_modules" / "playwright-core"
CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path(__file__).with_name("driver.cjs")
RESULTS = REPO / "test-results" / "vscode"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# Settings that keep runs quiet and deterministic.
BASE_SETTINGS = {
    "workbench.startupEditor": "none",
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "telemetry.telemetryLevel": "off",
    "chat.disableAIFeatures": True,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "workbench.tips.enabled": False,
    "update.mode": "none",
}


def vsix_path() -> Path:
    version = json.loads((REPO / "package.json").read_text())["version"]
    return REPO / "dist" / f"stepscope-{version}-linux-x64.vsix"


def require_tools() -> None:
    missing = [str(p) for p in (NODE, CODE_SERVER, PLAYWRIGHT_CORE, CHROMIUM) if not p.exists()]
    if missing:
        pytest.fail(
            "VS Code test tools are missing (" + ", ".join(missing) + "): run tools/setup-tools.sh",
            pytrace=False,
        )
    if not vsix_path().exists():
        pytest.fail(f"{vsix_path()} is missing: run tools/build-vsix.sh", pytrace=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class CodeServer:
    root: Path
    workspace: Path
    settings: dict
    trusted: bool = True
    port: int = 0
    process: subprocess.Popen | None = None

    @property
    def user_dir(self) -> Path:
        return self.root / "user"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPSCOPE_", "VSCODE_"))}
        # Node 24 and the system's folders only: no virtualenv leaks into the editor.
        env["PATH"] = os.pathsep.join([str(NODE_BIN), SYSTEM_PATH])
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONPATH", None)
        env["HOME"] = str(self.root / "home")
        env["TMPDIR"] = str(self.root / "tmp")
        return env

    def _common_args(self) -> list[str]:
        return [
            "--user-data-dir", str(self.user_dir),
            "--extensions-dir", str(self.root / "extensions"),
            "--config", str(self.root / "config.yaml"),
        ]

    def prepare(self) -> None:
        for sub in ("home", "tmp", "user/User", "extensions"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "config.yaml").write_text("auth: none\ncert: false\n")
        settings = {**BASE_SETTINGS, **self.settings}
        settings["security.workspace.trust.enabled"] = not self.trusted
        if not self.trusted:
            # Open untrusted folders in restricted mode without asking.
            settings["security.workspace.trust.startupPrompt"] = "never"
        (self.user_dir / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
        install = subprocess.run(
            [str(CODE_SERVER), *self._common_args(), "--install-extension", str(vsix_path())],
            env=self.env(), capture_output=True, text=True, timeout=180,
        )
        assert install.returncode == 0, f"installing the .vsix failed:\n{install.stdout}\n{install.stderr}"

    def start(self) -> None:
        self.prepare()
        self.port = free_port()
        args = [
            str(CODE_SERVER), "--bind-addr", f"127.0.0.1:{self.port}", "--auth", "none",
            "--disable-telemetry", "--disable-update-check", "--disable-getting-started-override",
            *self._common_args(),
        ]
        if self.trusted:
            args.append("--disable-workspace-trust")
        args.append(str(self.workspace))
        with open(self.root / "code-server.log", "wb") as log:
            self.process = subprocess.Popen(
                args, env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"code-server exited: {(self.root / 'code-server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise AssertionError("code-server did not answer /healthz within 90 s")

    def stop(self) -> None:
        if self.process is None:
            return
        # The whole group: a file-watcher child outlives the main process otherwise.
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait)
                # Children may still be exiting; give the group a moment, then make sure.
                time.sleep(0.5)
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process = None

    def stepscope_log(self) -> str:
        """The Stepscope output channel, as the extension host wrote it to disk."""
        logs = sorted(self.user_dir.glob("logs/**/*Stepscope*.log"))
        return "\n".join(p.read_text(errors="replace") for p in logs)

    def drive(self, scenario: str, screenshots: Path, **extra) -> dict:
        """Runs the browser driver for one scenario; returns what it observed."""
        shutil.rmtree(screenshots, ignore_errors=True)  # no stale pictures from an earlier run
        screenshots.mkdir(parents=True)
        config = {
            "url": self.url,
            "folder": str(self.workspace),
            "scenario": scenario,
            "chromium": str(CHROMIUM),
            "playwrightCore": str(PLAYWRIGHT_CORE),
            "profileDir": str(self.root / "browser"),
            "screenshots": str(screenshots),
            "result": str(self.root / f"{scenario}-result.json"),
            **extra,
        }
        config_path = self.root / f"{scenario}-config.json"
        config_path.write_text(json.dumps(config))
        # Chromium's singleton socket path must be short; pytest's temporary paths are not.
        browser_tmp = tempfile.mkdtemp(prefix="ss-browser-", dir="/tmp")
        try:
            run = subprocess.run(
                [str(NODE), str(DRIVER), str(config_path)],
                env={**self.env(), "TMPDIR": browser_tmp}, capture_output=True, text=True, timeout=420,
            )
        finally:
            shutil.rmtree(browser_tmp, ignore_errors=True)
        result_path = Path(config["result"])
        result = json.loads(result_path.read_text()) if result_path.exists() else {}
        result["driver_exit"] = run.returncode
        result["driver_output"] = (run.stdout + run.stderr)[-4000:]
        return result
