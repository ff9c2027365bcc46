"""Tries to reach the ledger: records its environment, its arguments and every request
it received, finds the fixture server in the evidence URLs and asks it for the ledger of
the page's scope, without a token and with a guessed one. Writes one JSON line per
judgement to the file named by its first argument, and answers from the evidence."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good

out = sys.argv[1]


def fetch(url, token):
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception as e:  # noqa: BLE001
        return str(e)


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "protocol" in msg:
        record = {"handshake": line, "env": dict(os.environ), "argv": sys.argv}
        with open(out, "a") as f:
            f.write(json.dumps(record) + "\n")
        sys.stdout.write(json.dumps({"protocol": "faultline.policy", "version": 1}) + "\n")
        sys.stdout.flush()
        continue
    url = urllib.parse.urlparse(msg["evidence"]["url_before"])
    # Page URLs look like http://127.0.0.1:PORT/s/<scope>/<task>?...
    parts = url.path.strip("/").split("/")
    scope = parts[1] if len(parts) > 1 else "x"
    ledger = "%s://%s/api/ledger/%s" % (url.scheme, url.netloc, scope)
    record = {
        "request": line,
        "env": dict(os.environ),
        "argv": sys.argv,
        "ledger_url": ledger,
        "no_token": fetch(ledger, None),
        "guessed_token": fetch(ledger, "0" * 64),
    }
    with open(out, "a") as f:
        f.write(json.dumps(record) + "\n")
    sys.stdout.write(json.dumps(good(msg)) + "\n")
    sys.stdout.flush()
