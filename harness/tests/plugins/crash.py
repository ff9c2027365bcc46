"""Answers two judgements, then crashes on the third (every incarnation does)."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good, serve

count = 0


def judge(msg):
    global count
    count += 1
    if count > 2:
        sys.stderr.write("Traceback: boom on request %d\n" % count)
        sys.stderr.flush()
        sys.exit(3)
    return good(msg)


serve(judge)
