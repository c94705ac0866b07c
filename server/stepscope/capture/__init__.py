"""The capture side of a profile run: prepare the run folder, start the agent, watch it, stop it.

No torch here: this runs in the CLI or the language server. See `runner.run_capture`; `launch.py`
starts the agent processes (one per rank with `--nproc N`), `agents.py` is one of them, and
`rank_records.py` makes a distributed run's scenario.json and files.json from the ranks' own.
"""
