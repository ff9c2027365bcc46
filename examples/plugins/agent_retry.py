#!/usr/bin/env python3
"""An external faultline agent: retries its last browser action when the verdict is not
success, answers a value it can read, and stops otherwise.

It speaks the faultline.agent protocol, version 1: JSON lines on stdin and stdout.

    {"protocol": "faultline.agent", "version": 1, "name": "exec", "formats": ["faultline"]}
    {"type": "act", "id": 1, "view": {"instruction": ..., "observation": {"screenshot": PATH,
     "size": ..., "text": ...}, "feedback": {"policy", "verdict", "message"} | null,
     "history": [...], "budget_left": 3, "step": 1, "image": ..., "seed": ...}}

and answers

    {"protocol": "faultline.agent", "version": 1, "deterministic": true}
    {"id": 1, "reply": "click(120, 44)", "format": "faultline"}

`deterministic` says the same view always gets the same reply (true here: the rules read
nothing but the view), so faultline runs each episode once instead of `[recovery] runs`
times unless its fault draws parameters from the run's seed.

Rules, in order:
1. a chart task ("report its value"): if the observation text shows "<label>: <digits>",
   answer that value;
2. the policy said success: stop;
3. budget left and the last step had browser actions: repeat the last step's reply;
4. otherwise stop.
Standard library only.
"""
import json
import re
import sys


def act(view):
    instruction = view["instruction"]["text"]
    text = view["observation"]["text"]
    if view["instruction"]["task"] == "chart":
        m = re.search(r'"([^"]+)"', instruction)
        if m:
            value = re.search(re.escape(m.group(1)) + r":\s*(\d+)", text)
            if value:
                return 'answer("%s")' % value.group(1)
    feedback = view.get("feedback") or {}
    if feedback.get("verdict") == "success":
        return "stop()"
    history = view.get("history") or []
    if history and view["budget_left"] > 0:
        last = history[-1]
        browser = [a for a in last["actions"] if a.get("kind") in ("click", "hover", "type", "press", "scroll")]
        if browser and len(browser) <= view["budget_left"]:
            # Drop an answer the recorded reply carried: only the browser part is retried.
            lines = [l for l in last["reply"].splitlines() if not l.strip().startswith("answer(")]
            return "\n".join(lines)
    return "stop()"


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "protocol" in msg:
            answer = {"protocol": "faultline.agent", "version": 1, "deterministic": True}
        else:
            answer = {"id": msg.get("id"), "reply": act(msg["view"]), "format": "faultline"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
