"""A real DevTools client for the proxy's tests: Playwright for Python, connected over
CDP to the endpoint given as argv[1] (an http:// discovery URL), doing a navigation, a
click, typing, a screenshot and an evaluation in each iframe of the test page at argv[2].

Prints one JSON object on stdout: what it saw. Exits non-zero with one line on stderr
when anything fails.
"""

import json
import struct
import sys

from playwright.sync_api import sync_playwright


def main():
    endpoint, url = sys.argv[1], sys.argv[2]
    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(endpoint, timeout=20000)
        try:
            context = browser.new_context(viewport={"width": 800, "height": 600})
            page = context.new_page()
            page.goto(url, wait_until="load")
            page.click("#button")
            page.click("#field")
            page.keyboard.type("hello proxy")
            page.wait_for_function("document.getElementById('clicks').textContent === '1'")
            png = page.screenshot(full_page=False)
            width, height = struct.unpack(">II", png[16:24])
            frames = {}
            for frame in page.frames:
                if frame == page.main_frame:
                    continue
                frame.wait_for_selector("#inner")
                frames[frame.url.split("/")[2].split(":")[0]] = frame.evaluate(
                    "document.getElementById('inner').textContent"
                )
            seen = {
                "title": page.title(),
                "clicks": page.text_content("#clicks"),
                "typed": page.input_value("#field"),
                "screenshot": [width, height, png[:8] == b"\x89PNG\r\n\x1a\n"],
                "frames": frames,
                "version": browser.version != "",
            }
            context.close()
        finally:
            browser.close()
    print(json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for the test's assertion message
        print(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
