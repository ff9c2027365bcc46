"""Shared by the test plugins: the faultline.policy protocol loop, standard library only."""
import json
import sys


def serve(judge, version=1, protocol="faultline.policy"):
    """Answers the handshake with `version`, then every request with judge(msg) (a dict,
    or a str written as is)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "protocol" in msg:
            answer = {"protocol": protocol, "version": version}
        else:
            answer = judge(msg)
        sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
        sys.stdout.write("\n")
        sys.stdout.flush()


def frames_changed(ev):
    pairs = lambda s: [(f["url"], f["dom_digest"]) for f in s.get("frames", [])]
    return ev["url_before"] != ev["url_after"] or pairs(ev["before_state"]) != pairs(ev["after_state"])


def good(msg):
    verdict = "success" if frames_changed(msg["evidence"]) else "no_change"
    return {"id": msg["id"], "verdict": verdict, "message": "ok"}
