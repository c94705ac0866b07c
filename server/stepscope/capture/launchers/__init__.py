"""Runs started by a launcher (torchrun, srun, mpirun, ...): the launcher's command with the run's
own agent as its program (`command.py`), the agents' events read from their files in the run folder
(`events.py`), and the launcher's process watched and stopped (`external.py`).

`stepscope profile --nproc N` is such a run too: torchrun on this machine, N processes.
"""
