#!/usr/bin/env python3
"""An external faultline verifier: success when the URL or any frame's DOM changed.

It speaks the faultline.policy protocol, version 1: JSON lines on stdin and stdout.
The harness sends a handshake, then one request per judgement:

    {"protocol": "faultline.policy", "version": 1, "name": ..., "viewport": {...}}
    {"type": "judge", "id": 1, "evidence": {...}}

and this script answers

    {"protocol": "faultline.policy", "version": 1}
    {"id": 1, "verdict": "success" | "no_change" | "fail", "message": "..."}

Unlike the built-in `generic` policy, which compares the top document only, this one
compares every frame, so it sees a row selected inside an iframe. Standard library only.
"""
import json
import sys


def frames(state):
    return [(f["url"], f["dom_digest"]) for f in state.get("frames", [])]


def judge(ev):
    if ev["url_before"] != ev["url_after"]:
        return "success", "The page navigated to %s." % ev["url_after"]
    before, after = frames(ev["before_state"]), frames(ev["after_state"])
    if before != after:
        changed = sum(1 for a, b in zip(before, after) if a != b) + abs(len(before) - len(after))
        return "success", "The page changed (%d frame(s))." % changed
    return "no_change", "No change detected in any frame."


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "protocol" in msg:
            answer = {"protocol": "faultline.policy", "version": 1}
        else:
            verdict, message = judge(msg["evidence"])
            answer = {"id": msg.get("id"), "verdict": verdict, "message": message}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
