"""A plugin that sends far too much. `huge.py message N`: a verifier whose verdict comes
with an N-byte message; `huge.py reply N`: an agent that types N characters; `huge.py
endless`: a verifier that answers with a line that never ends."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good, serve

mode = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def message(msg):
    answer = good(msg)
    answer["message"] = "M" * size
    return answer


def reply(msg):
    return {"id": msg["id"], "reply": 'type("%s")' % ("A" * size)}


def endless(msg):
    chunk = "x" * 65536
    while True:
        sys.stdout.write(chunk)


if mode == "message":
    serve(message)
elif mode == "reply":
    serve(reply, protocol="faultline.agent")
else:
    serve(endless)
