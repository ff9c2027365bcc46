"""An exec agent that thinks slowly, within its timeout, then asks for a wait at the
episode's cap (`wait(10000)`), then stops. Its first argument is how long it thinks, in
seconds."""
import json
import sys
import time

think = float(sys.argv[1])
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "protocol" in msg:
        answer = {"protocol": "faultline.agent", "version": 1}
    elif msg["view"]["step"] == 1:
        time.sleep(think)
        answer = {"id": msg["id"], "reply": "wait(10000)"}
    else:
        answer = {"id": msg["id"], "reply": "stop()"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
