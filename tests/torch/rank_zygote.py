"""A process that imports torch once and forks the ranks of each launch from there
(launch.py): importing torch costs ~1.9 s of CPU per process, most of the torch tests' time
on 2 cores. Each forked rank is a real, separate process: it takes its own environment, runs
the worker script as __main__ (runpy) with stdout and stderr in files, and exits with the
script's status, or dies of its signal.

Protocol, one JSON line each way per launch: {"script", "args", "envs" (one dict per rank),
"timeout", "dir"} in; [[returncode, timed_out], ...] out (returncode < 0: killed by that
signal, as subprocess reports it). Ends at the end of its standard input."""
import atexit
import json
import os
import runpy
import signal
import sys
import time
import traceback

import torch  # noqa: F401  (what the ranks share; nothing starts a thread here)
import torch.distributed  # noqa: F401
import torch.nn.parallel  # noqa: F401

assert len(os.listdir("/proc/self/task")) == 1, "rank_zygote: a thread exists before fork"


def run_rank(req, rank):
    """In the forked child: never returns."""
    code = 1
    try:
        for fd, name in ((1, "out"), (2, "err")):
            f = os.open(os.path.join(req["dir"], f"rank{rank}.{name}"),
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the request pipe is the zygote's, not the rank's
        os.close(null)
        os.environ.clear()
        os.environ.update(req["envs"][rank])
        sys.argv = [req["script"], *req["args"]]
        try:
            runpy.run_path(req["script"], run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def wait_all(pids, timeout):
    """[[returncode, timed_out]] per pid; every rank still running at the deadline is killed."""
    status = {}
    deadline = time.monotonic() + timeout
    while len(status) < len(pids):
        for pid in pids:
            if pid not in status:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status[pid] = [os.waitstatus_to_exitcode(st), False]
        if len(status) < len(pids) and time.monotonic() > deadline:
            for pid in pids:
                if pid not in status:
                    os.kill(pid, signal.SIGKILL)
                    _, st = os.waitpid(pid, 0)
                    status[pid] = [os.waitstatus_to_exitcode(st), True]
        time.sleep(0.005)
    return [status[pid] for pid in pids]


def main():
    for line in sys.stdin:
        req = json.loads(line)
        pids = []
        for rank in range(len(req["envs"])):
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                run_rank(req, rank)
            pids.append(pid)
        print(json.dumps(wait_all(pids, req["timeout"])), flush=True)


if __name__ == "__main__":
    main()
