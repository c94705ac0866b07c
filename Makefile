# Two commands do everything on a fresh machine:
#   make demo   profile the example's training step and build the VS Code extension (.vsix)
#   make test   every test: unit, the client's own, language server, real torch runs, real VS Code
# Everything installs itself: a virtualenv in .venv, editor tooling in .cache/tools.
# `make demo` installs only what the demo needs (the venv with torch and stepscope, Node 24 and vsce);
# `make test` adds what the tests need (the dev extras, code-server, chromium, neovim).

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
BASE   := $(VENV)/.base-installed
DEPS   := $(VENV)/.deps-installed
VSIX   := dist/stepscope-0.1.0-linux-x64.vsix

.PHONY: demo test venv venv-base tools tools-build vsix panel test-python test-client test-vscode clean

# What the demo needs: torch for the example and the stepscope package, without its extras.
$(BASE): pyproject.toml setup.py server/stepscope/trace/_columns.c server/stepscope/trace/_rows.c server/stepscope/analysis/_nesting.c server/stepscope/analysis/_timeline.c
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# The CPU build of torch runs the examples; the stepscope package itself does not need it.
	# --no-compile: byte-compiling all of torch's 5,900 modules up front took longer than the install;
	# Python compiles the few hundred an import needs, once, when it first imports them.
	$(VPY) -m pip install -q --no-compile torch==2.13.0 numpy
	$(VPY) -m pip install -q -e .
	touch $@

# What the tests need as well: the language server's and the MCP server's libraries, pytest and
# the frameworks the tests profile (the dev extra).
$(DEPS): $(BASE)
	$(VPY) -m pip install -q -e '.[dev]'
	touch $@

venv-base: $(BASE)

venv: $(DEPS)

# Node 24 and vsce: what building the .vsix needs
tools-build:
	bash tools/setup-tools.sh --build-only

# and code-server, playwright-core, chromium, neovim: what the editor tests need
tools:
	bash tools/setup-tools.sh

vsix: venv-base tools-build
	bash tools/build-vsix.sh

# The trace panel's webview (panel/dist) and its unit tests' bundles; tests/panel runs them.
panel:
	[ -d node_modules/esbuild ] || npm ci --no-audit --no-fund --loglevel=error
	node panel/build.mjs --tests

# The venv and the build tools install side by side: one is mostly pip, the other npm.
demo:
	$(MAKE) --no-print-directory -j2 venv-base tools-build
	$(MAKE) --no-print-directory vsix
	$(VENV)/bin/stepscope profile examples/train_cpu.py
	@echo
	@echo "VS Code extension: $(VSIX)"
	@echo "Install it with:   code --install-extension $(VSIX)"
	@echo "(or in VS Code: Extensions view > ... > Install from VSIX...)"

test-python: venv
	$(VPY) -m pytest tests -q -m "not vscode"

# the VS Code client's own logic (launch configurations, settings, heat scale, results): node --test
test-client: tools-build
	bash tools/test-client.sh

test-vscode: venv tools vsix
	$(VPY) -m pytest tests/vscode -q -m vscode

# Every test but the editors' runs on both cores, a file per worker (a file's tests and fixtures stay
# on one worker); then the editors' own (code-server with Chromium, Neovim), one at a time, since each
# drives a whole editor. The slowest tests are listed at the end: CI has 2 cores.
EDITOR_TESTS := tests/vscode tests/neovim
test: venv tools vsix test-client
	$(VPY) -m pytest tests -q -n 2 --dist loadfile --durations=15 $(addprefix --ignore=,$(EDITOR_TESTS))
	$(VPY) -m pytest $(EDITOR_TESTS) -q --durations=5

clean:
	rm -rf $(VENV) .cache build dist bundled extension/dist panel/dist .stepscope test-results
