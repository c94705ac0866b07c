"""Start a job step's tasks with the environment `srun` gives them (CI has no SLURM).

    python slurm_tasks.py -N NODES -n TASKS COMMAND...

Each task gets what srun sets for a task and nothing torchrun would set: SLURM_PROCID (its rank in
the step), SLURM_LOCALID (its index on its node), SLURM_NODEID, SLURM_NTASKS, SLURM_NNODES,
SLURM_JOB_ID, SLURM_STEP_ID, SLURM_TASKS_PER_NODE and SLURMD_NODENAME; the tasks are spread over the
nodes block-wise, as srun does by default (every node here is this machine). Like srun, it waits for
every task and exits with the highest exit status, and passes SIGTERM and SIGINT on to the tasks.
"""

import argparse
import os
import signal
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-N", dest="nodes", type=int, default=1)
    parser.add_argument("-n", dest="tasks", type=int, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    per_node = -(-args.tasks // args.nodes)
    environ = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK")}
    tasks = []
    for rank in range(args.tasks):
        node = rank // per_node
        env = {**environ, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank % per_node), "SLURM_NODEID": str(node),
               "SLURM_NTASKS": str(args.tasks), "SLURM_NNODES": str(args.nodes), "SLURM_JOB_ID": "4242",
               "SLURM_STEP_ID": "0", "SLURM_TASKS_PER_NODE": f"{per_node}(x{args.nodes})",
               "SLURMD_NODENAME": f"node{node}"}
        tasks.append(subprocess.Popen(args.command, env=env))

    def forward(sig, _frame):
        for task in tasks:
            task.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return max(abs(task.wait()) for task in tasks)


if __name__ == "__main__":
    sys.exit(main())
