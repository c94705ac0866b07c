"""The capture side of a profile run: prepare the run folder, start the agent, watch it, stop it.

No torch here: this runs in the CLI or the language server. See `runner.run_capture`.
"""
