"""Answers its first judgement, then never answers again."""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good, serve

count = 0


def judge(msg):
    global count
    count += 1
    if count > 1:
        sys.stderr.write("hanging on request %d\n" % count)
        sys.stderr.flush()
        while True:
            time.sleep(60)
    return good(msg)


serve(judge)
