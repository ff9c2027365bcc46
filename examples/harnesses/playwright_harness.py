#!/usr/bin/env python3
"""A reference browser-agent harness for faultline's environment API.

Playwright for Python drives its own headless Chromium. The harness has the four parts
every browser-agent harness has, each small enough to read:

- a parser: the reply's lines (`click(x, y)`, `type("text")`, ...) into actions, after
  stripping chat special tokens such as <|im_end|>;
- an executor: actions into mouse and keyboard input, image points scaled to the
  viewport;
- an observation: a screenshot and the page's visible text, after letting the page
  settle (longer after a hover, for tooltips), with the page-clock interval of the
  capture;
- a verifier: did the action change the page (every frame, not only the main one), and
  does the observation show the answer it gave?

For a recovery episode it adds an agent: a transparent rule-based loop like faultline's
built-in `trusting` agent (answer a value the page shows when the instruction asks for
one; stop when its verifier says success; wait once on no change; else resend the first
reply's browser actions while the budget allows; else stop). Every step goes through the
same parser, executor, observation and verifier, so a planted defect acts on every retry.

Each part has a flag that plants the defect faultline's conformance probes look for:

  --no-strip-tokens  the parser keeps <|im_end|> in the typed text
  --no-scale         the executor uses image points as viewport points
  --trust-tool       the verifier believes the tool's message, which diffs only the
                     main frame ("No change detected." after a click into an iframe)
  --no-settle        the observation is captured right after the action

With --devtools the harness opens its browser with a DevTools port, names it in each
claim (`devtools_upstream`), and drives each item over the DevTools proxy the claim
offers (`devtools`): the one line a harness changes is the endpoint it connects to.

Run by `faultline run` (its `[harness] command`), which passes FAULTLINE_ENV_URL,
FAULTLINE_ENV_TOKEN, FAULTLINE_WORKER and FAULTLINE_CHROMIUM in the environment; or by
hand against `faultline env`, with the two variables it prints.

Needs: python3 and `pip install playwright` (no browser download: it runs the system's
Chromium or chromium-headless-shell).
"""

import argparse
import base64
import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.request

SPECIAL_TOKENS = ["<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "</s>"]
SETTLE_MS = 120
HOVER_SETTLE_MS = 1400
LINE = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$")
PlaywrightError = Exception  # replaced by Playwright's own error class in main()


class Api:
    """The environment API: bearer token, JSON in and out."""

    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def raw(self, path, data):
        """Posts raw bytes (for the misbehaviour tests)."""
        req = urllib.request.Request(self.url + path, data=data, method="POST")
        req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code


# ---- the parser -------------------------------------------------------------------


def parse(reply, strip_tokens=True):
    """The reply's actions, in order: [(verb, [args...]), ...]."""
    if strip_tokens:
        for t in SPECIAL_TOKENS:
            reply = reply.replace(t, "")
    actions = []
    for line in reply.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        verb, args = m.group(1), m.group(2).strip()
        # faultline's grammar quotes strings as JSON does.
        values = json.loads("[" + args + "]") if args else []
        actions.append((verb, values))
    if not actions:
        raise ValueError("no action in the reply")
    return actions


# ---- the executor -----------------------------------------------------------------


def execute(page, actions, scale):
    """Runs the actions; returns what was executed (with the points sent) and the answer."""
    sx, sy = scale
    executed, answer = [], None
    for verb, args in actions:
        entry = {"verb": verb, "args": args}
        if verb in ("click", "double_click", "right_click", "hover"):
            x, y = args[0] * sx, args[1] * sy
            entry["sent"] = [x, y]
            if verb == "click":
                page.mouse.click(x, y)
            elif verb == "double_click":
                page.mouse.dblclick(x, y)
            elif verb == "right_click":
                page.mouse.click(x, y, button="right")
            else:
                page.mouse.move(x, y)
        elif verb == "type":
            page.keyboard.type(args[0])
        elif verb == "press":
            page.keyboard.press(args[0])
            # A key that submits a form navigates: the next page is the one observed.
            try:
                page.wait_for_load_state("load", timeout=5000)
            except Exception:
                pass
        elif verb == "scroll":
            page.mouse.wheel(args[0], args[1])
        elif verb == "wait":
            page.wait_for_timeout(min(args[0], 5000))
        elif verb == "answer":
            answer = str(args[0])
        executed.append(entry)
    return executed, answer


# ---- the observation ----------------------------------------------------------------


def frames_html(page):
    return [f.evaluate("document.documentElement.outerHTML") for f in page.frames]


def observe(page, settle_ms):
    """A screenshot and the visible text, with the capture's page-clock interval."""
    if settle_ms:
        page.wait_for_timeout(settle_ms)
    for _ in range(5):
        try:
            begin = page.evaluate("performance.now()")
            png = page.screenshot()
            texts = [
                f.evaluate("document.body ? document.body.innerText : ''")
                for f in page.frames
            ]
            html = frames_html(page)
            end = page.evaluate("performance.now()")
        except PlaywrightError:
            # A navigation replaced the document mid-capture: look at the new one.
            page.wait_for_load_state("load")
            continue
        if end < begin:
            # The clock restarted: a new document arrived between the two readings.
            continue
        return {
            "png": png,
            "text": "\n".join(texts),
            "html": html,
            "capture": {"begin_ms": begin, "end_ms": end},
        }
    raise RuntimeError("the page kept navigating; no stable observation")


# ---- the tool message and the verifier ---------------------------------------------


def tool_message(before, after):
    """What the tool tells the agent: a diff of the main frame only."""
    if before["html"][:1] == after["html"][:1]:
        return "No change detected."
    return "The page changed."


def verify(before, after, answer, tool_msg, trust_tool):
    """(verdict, message)."""
    if trust_tool:
        if tool_msg.startswith("No change"):
            return "no_change", "the tool reported no change"
        return "success", "the tool reported a change"
    if answer is not None:
        if answer in after["text"]:
            return "success", f"the observation shows {answer!r}"
        return "fail", f"the observation does not show {answer!r}"
    if before["html"] == after["html"]:
        return "no_change", "no frame of the page changed"
    return "success", "the page changed"


# ---- one item -----------------------------------------------------------------------


def scale_of(item, flags):
    """How image points become viewport points (the executor's scaling)."""
    if flags.no_scale:
        return (1.0, 1.0)
    viewport, image = item["viewport"], item["image"]
    return (viewport["width"] / image["width"], viewport["height"] / image["height"])


def run_item(browser, item, flags):
    viewport = item["viewport"]
    context = browser.new_context(
        viewport={"width": viewport["width"], "height": viewport["height"]}
    )
    try:
        page = context.new_page()
        page.goto(item["start_url"], wait_until="load")
        before = observe(page, 0)
        report = {"captures": [before["capture"]]}
        try:
            actions = parse(item["reply"], strip_tokens=not flags.no_strip_tokens)
        except (ValueError, json.JSONDecodeError) as e:
            report.update(verdict="fail", message=f"parse error: {e}", tool_message=str(e))
            return report
        try:
            executed, answer = execute(page, actions, scale_of(item, flags))
            hovered = any(v == "hover" for v, _ in actions)
            settle = 0 if flags.no_settle else (HOVER_SETTLE_MS if hovered else SETTLE_MS)
            after = observe(page, settle)
        except PlaywrightError as e:
            # The browser refused an action or lost the page: the tool's error is the
            # item's outcome, reported as such (not a crash of the harness).
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            report.update(verdict="fail", message=f"the tool failed: {first}", tool_message=first)
            return report
        msg = tool_message(before, after)
        verdict, message = verify(before, after, answer, msg, flags.trust_tool)
        report.update(
            verdict=verdict,
            message=message,
            tool_message=msg,
            executed=executed,
            answer=answer,
            observation_text=after["text"][:4000],
        )
        report["captures"].append(after["capture"])
        if not flags.no_shots:
            report["before_png"] = base64.b64encode(before["png"]).decode()
            report["after_png"] = base64.b64encode(after["png"]).decode()
        return report
    finally:
        context.close()


# ---- the agent (recovery episodes) --------------------------------------------------

BROWSER_VERBS = {"click", "double_click", "right_click", "hover", "type", "press", "scroll"}
WAIT_MS = 1500
ASKED = re.compile(r'"([^"]+)".*report the value')


def value_shown(text, label):
    """The number the text shows right after `label: ` (a chart tooltip's `Mar: 57`)."""
    needle = label + ": "
    start = text.find(needle)
    while start != -1:
        rest = text[start + len(needle):]
        digits = re.match(r"[0-9.]*", rest).group(0)
        if digits:
            return digits
        start = text.find(needle, start + 1)
    return None


def agent(instruction, first_reply, history, budget_left, observation_text):
    """The next reply, from what the harness saw and its verifier said. The rules, first
    match wins: answer a value the instruction asks for when the page shows it; stop on
    success; wait once on no change; resend the first reply's browser actions while the
    budget covers them; stop."""
    asked = ASKED.search(instruction)
    if asked:
        value = value_shown(observation_text, asked.group(1))
        if value is not None:
            return f"answer({json.dumps(value)})"
    verdict = history[-1]["verdict"] if history else None
    if verdict == "success":
        return "stop()"
    waited = any(h["reply"].startswith("wait(") for h in history)
    if verdict == "no_change" and not waited:
        return f"wait({WAIT_MS})"
    # The first reply's own lines, kept as written: the harness's parser reads them again.
    retry = [
        line
        for line in first_reply.splitlines()
        if LINE.match(line) and LINE.match(line).group(1) in BROWSER_VERBS
    ]
    if retry and len(retry) <= budget_left:
        return "\n".join(retry)
    return "stop()"


def terminal(reply):
    """(answer, True) when the reply only answers or stops: nothing for the browser."""
    try:
        actions = parse(reply)
    except (ValueError, json.JSONDecodeError):
        return None, False
    if all(v in ("answer", "stop") for v, _ in actions):
        answers = [str(a[0]) for v, a in actions if v == "answer"]
        return (answers[-1] if answers else None), True
    return None, False


def episode_step(page, reply, before, flags, scale, max_wait_ms):
    """Parses, executes, observes and judges one reply: (the step's report, the
    observation after it, whether the reply ended the episode)."""
    try:
        actions = parse(reply, strip_tokens=not flags.no_strip_tokens)
    except (ValueError, json.JSONDecodeError) as e:
        return {"parse_error": str(e), "tool_message": str(e)}, before, True
    actions = [
        (v, [min(a[0], max_wait_ms)]) if v == "wait" and a else (v, a) for v, a in actions
    ]
    executed, answer = execute(page, actions, scale)
    hovered = any(v == "hover" for v, _ in actions)
    settle = 0 if flags.no_settle else (HOVER_SETTLE_MS if hovered else SETTLE_MS)
    after = observe(page, settle)
    msg = tool_message(before, after)
    verdict, message = verify(before, after, answer, msg, flags.trust_tool)
    step = {
        "executed": executed,
        "tool_message": msg,
        "verdict": verdict,
        "message": message,
        "captures": [after["capture"]],
        "observation_text": after["text"][:4000],
    }
    if answer is not None:
        step["answer"] = answer
    ended = answer is not None or any(v == "stop" for v, _ in actions)
    return step, after, ended


def run_episode(browser, item, api, flags, misbehave=None):
    """Runs an episode, posting every step; returns its report (how it ended), or None
    when a misbehaving worker leaves it unreported."""
    budget = item["budget"]
    steps_path = f"/v1/leases/{item['lease']}/steps"
    deadline = time.monotonic() + budget["time_limit_ms"] / 1000
    viewport = item["viewport"]
    context = browser.new_context(
        viewport={"width": viewport["width"], "height": viewport["height"]}
    )
    try:
        page = context.new_page()
        page.goto(item["start_url"], wait_until="load")
        before = observe(page, 0)
        scale = scale_of(item, flags)
        # Step 0: the recorded reply, replayed.
        step, seen, _ = episode_step(
            page, item["reply"], before, flags, scale, budget["max_wait_ms"]
        )
        step["captures"] = [before["capture"]] + step.get("captures", [])
        history = []
        reply = item["reply"]
        while True:
            status, told = api.call("POST", steps_path, step)
            if status != 200:
                raise RuntimeError(f"step refused ({status}): {told}")
            if misbehave == "crash":
                os._exit(3)
            if misbehave == "never-report":
                return None
            if misbehave == "garbage":
                api.raw(f"/v1/leases/{item['lease']}/report", b'{"stop_reason": "maybe"')
                return None
            history.append({"reply": reply, "verdict": step.get("verdict")})
            if "parse_error" in step:
                return {"stop_reason": "parse_error", "error": step["parse_error"]}
            if len(history) > 1 and step.get("answer") is not None:
                return {"stop_reason": "answered"}
            if told["steps_left"] == 0:
                return {"stop_reason": "step_cap"}
            if time.monotonic() >= deadline:
                return {"stop_reason": "time_limit"}
            reply = agent(
                item["instruction"],
                item["reply"],
                history,
                told["browser_actions_left"],
                seen["text"],
            )
            answer, done = terminal(reply)
            if done:
                # Nothing for the browser: the answer is judged against the newest capture.
                said = "Stopped." if answer is None else f"Answered {answer!r}."
                step = {"reply": reply, "tool_message": said}
                if answer is not None:
                    step["answer"] = answer
                status, told = api.call("POST", steps_path, step)
                if status != 200:
                    raise RuntimeError(f"step refused ({status}): {told}")
                return {"stop_reason": "stopped" if answer is None else "answered"}
            step, seen, _ = episode_step(
                page, reply, seen, flags, scale, budget["max_wait_ms"]
            )
            step["reply"] = reply
    finally:
        context.close()


# ---- over faultline's DevTools proxy (--devtools) ------------------------------------


def free_port():
    """A loopback port nobody listens on now, for the browser's DevTools."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_item_over_devtools(playwright, item, flags):
    """The item, driven over a CDP connection of its own to `devtools`: the proxy its
    claim offers, or (--cdp) the browser itself."""
    via = "CDP directly at" if flags.cdp else "the DevTools proxy"
    print(f"item {item['item']}: over {via} {item['devtools']}", file=sys.stderr)
    browser = playwright.chromium.connect_over_cdp(item["devtools"])  # the one line
    try:
        return run_item(browser, item, flags)
    finally:
        browser.close()  # disconnects; the browser itself stays up


def misbehave_now(flags, kind):
    """True once per marker file: the first item of `--misbehave-on`'s kind of the first
    worker to get here."""
    if not flags.misbehave or kind != flags.misbehave_on:
        return False
    try:
        fd = os.open(flags.misbehave_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
        return True
    except FileExistsError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-strip-tokens", action="store_true")
    ap.add_argument("--no-scale", action="store_true")
    ap.add_argument("--trust-tool", action="store_true")
    ap.add_argument("--no-settle", action="store_true")
    ap.add_argument("--no-shots", action="store_true", help="report no screenshots")
    ap.add_argument(
        "--devtools",
        action="store_true",
        help="drive each item through the DevTools proxy the claim offers",
    )
    ap.add_argument(
        "--devtools-worker",
        action="store_true",
        help="like --devtools, with one proxy for all this worker's items "
        '(devtools_scope "worker"): one connection, kept across items',
    )
    ap.add_argument(
        "--cdp",
        action="store_true",
        help="connect to each item's browser over CDP directly, as --devtools does through "
        "the proxy (the baseline for the proxy's cost)",
    )
    ap.add_argument(
        "--dry",
        action="store_true",
        help="report each item at once without opening it (measures the API's own cost)",
    )
    # For faultline's own tests: how a broken worker behaves, once per marker file.
    ap.add_argument(
        "--misbehave", choices=["crash", "never-report", "garbage", "double"]
    )
    ap.add_argument("--misbehave-marker", default="misbehaved.marker")
    ap.add_argument(
        "--misbehave-on",
        choices=["trial", "episode"],
        default="trial",
        help="misbehave on a trial (at once), or on an episode (after its first step)",
    )
    flags = ap.parse_args()

    api = Api(os.environ["FAULTLINE_ENV_URL"], os.environ["FAULTLINE_ENV_TOKEN"])
    worker = os.environ.get("FAULTLINE_WORKER", "manual")

    from playwright.sync_api import sync_playwright

    global PlaywrightError
    from playwright.sync_api import Error as PlaywrightError

    executable = (
        os.environ.get("FAULTLINE_CHROMIUM")
        or shutil.which("chromium-headless-shell")
        or shutil.which("chromium")
    )
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    claim = {"worker": worker}
    if flags.devtools or flags.devtools_worker or flags.cdp:
        port = free_port()
        args.append(f"--remote-debugging-port={port}")
    if flags.devtools or flags.devtools_worker:
        claim["devtools_upstream"] = f"http://127.0.0.1:{port}"
    if flags.devtools_worker:
        claim["devtools_scope"] = "worker"
    kept = {}  # --devtools-worker: the one connection, by the proxy's URL
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=args)
        try:
            while True:
                status, body = api.call("POST", "/v1/claim", claim)
                if status != 200:
                    print(f"claim refused ({status}): {body}", file=sys.stderr)
                    return 1
                item = body["item"]
                if item is None:
                    if body["done"]:
                        return 0
                    time.sleep(body["retry_after_ms"] / 1000)
                    continue
                path = f"/v1/leases/{item['lease']}/report"
                bad = misbehave_now(flags, item["kind"]) and flags.misbehave
                if item["kind"] == "episode" and not flags.dry:
                    report = run_episode(browser, item, api, flags, bad)
                    if report is None:
                        continue
                    status, told = api.call("POST", path, report)
                    if status != 200:
                        print(f"report refused ({status}): {told}", file=sys.stderr)
                    if bad == "double":
                        api.call("POST", path, report)
                    continue
                if bad == "crash":
                    os._exit(3)
                if bad == "never-report":
                    continue
                if bad == "garbage":
                    api.raw(path, b'{"verdict": "maybe"')
                    continue
                if flags.dry and item["kind"] == "episode":
                    step = {"verdict": "no_change", "message": "dry run: not opened"}
                    api.call("POST", f"/v1/leases/{item['lease']}/steps", step)
                    report = {"stop_reason": "stopped"}
                elif flags.dry:
                    report = {"verdict": "no_change", "message": "dry run: not opened"}
                elif item.get("devtools") and flags.devtools_worker:
                    if item["devtools"] not in kept:
                        for old in kept.values():
                            old.close()
                        kept.clear()
                        print(f"worker {worker}: one connection to {item['devtools']}", file=sys.stderr)
                        kept[item["devtools"]] = p.chromium.connect_over_cdp(item["devtools"])
                    report = run_item(kept[item["devtools"]], item, flags)
                elif item.get("devtools"):
                    report = run_item_over_devtools(p, item, flags)
                elif flags.cdp:
                    report = run_item_over_devtools(
                        p, dict(item, devtools=f"http://127.0.0.1:{port}"), flags
                    )
                else:
                    report = run_item(browser, item, flags)
                status, told = api.call("POST", path, report)
                if status != 200:
                    print(f"report refused ({status}): {told}", file=sys.stderr)
                if bad == "double":
                    api.call("POST", path, report)
        finally:
            for kept_browser in kept.values():
                kept_browser.close()
            browser.close()


if __name__ == "__main__":
    sys.exit(main())
