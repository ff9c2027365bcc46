"""A verifier that leaves processes behind which escape its process group: a child that
calls setsid and sleeps, and a daemon (fork, setsid, fork; the middle process exits at
once, so the daemon is nobody's child in the plugin's tree). Each writes its pid, one a
line, to the file named by the first argument."""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good, serve

pids = sys.argv[1]


def detach(double_fork):
    if os.fork() != 0:
        return
    os.setsid()
    if double_fork and os.fork() != 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(600)
    os._exit(0)


detach(double_fork=False)
detach(double_fork=True)
serve(good)
