#!/usr/bin/env bash
# A bounded soak: a detection run of about TRIALS trials with the browser SIGKILLed KILLS
# times at random moments. Prints items completed, failed attempts retried, final
# infrastructure failures, browser restarts, peak RSS (faultline, browser) and what was
# left behind (browser processes, profile directories); writes RSS over time to
# $SOAK_OUT/rss.csv (default results/soak/rss.csv).
#
# usage: soak.sh TRIALS KILLS [FAULTLINE_BINARY]
set -euo pipefail
trials=${1:-5000}
kills=${2:-5}
bin=${3:-target/release/faultline}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The catalogue's six tasks under every fault that applies to them: about 61 trials per
# layout, replaying the committed oracle decisions (40 layouts a task), so the soak
# measures trials, not the oracle recording decisions. Beyond 40 layouts (about 2,440
# trials) the oracle records the missing decisions first, under the same kills.
layouts=$(( (trials + 60) / 61 ))
cat > "$tmp/soak.toml" <<TOML
layouts = $layouts
tasks = ["search", "grid", "frame", "chart", "form", "select"]
policies = ["unverified", "generic", "pixel", "outcome"]
faults = ["all"]
[recovery]
enabled = false
[liveness]
browser_restarts = $(( kills + 2 ))
TOML
"$bin" run --config "$tmp/soak.toml" --out "$tmp/run" > "$tmp/run.log" 2> "$tmp/run.err" &
run=$!
# The browser: the child of the run whose command line names a faultline profile.
browser() { pgrep -P "$run" -f faultline-chromium- | head -n 1 || true; }
rss() { local v; v=$(ps -o rss= -p "$1" 2>/dev/null | tr -d ' ' || true); echo "${v:-0}"; }
group_rss() { ps -eo pgid=,rss= | awk -v g="$1" '$1 == g { s += $2 } END { print s + 0 }'; }
out=${SOAK_OUT:-results/soak}
mkdir -p "$out"
echo "t_s,faultline_rss_kb,browser_rss_kb" > "$out/rss.csv"
start=$(date +%s)
next_kill=$(( start + 15 + RANDOM % 30 ))
killed=0; peak_f=0; peak_b=0
while kill -0 "$run" 2>/dev/null; do
  now=$(date +%s); b=$(browser)
  # Every profile directory a browser of this run used: the leak check counts only these
  # (other faultline processes on the machine have profile directories of their own).
  # (The browser may exit between the two reads: a kill, or the run's end.)
  if [ -n "$b" ]; then
    { tr '\0' '\n' < "/proc/$b/cmdline" | sed -n 's/^--user-data-dir=//p' >> "$tmp/profiles.used"; } 2>/dev/null || true
  fi
  f_rss=$(rss "$run"); b_rss=0
  [ -n "$b" ] && b_rss=$(group_rss "$b")
  echo "$(( now - start )),$f_rss,$b_rss" >> "$out/rss.csv"
  (( f_rss > peak_f )) && peak_f=$f_rss
  (( b_rss > peak_b )) && peak_b=$b_rss
  if (( killed < kills && now >= next_kill )) && [ -n "$b" ]; then
    kill -9 "$b" && killed=$(( killed + 1 ))
    next_kill=$(( now + 15 + RANDOM % 45 ))
  fi
  sleep 1
done
wait "$run" && status=0 || status=$?
end=$(date +%s)
db="$tmp/run/results.sqlite"
stored=$(sqlite3 "$db" "SELECT COUNT(*) FROM trials")
attempts=$(sqlite3 "$db" "SELECT COUNT(*) FROM infra_errors WHERE policy = 'harness'")
failed=$(sqlite3 "$db" "SELECT COUNT(DISTINCT item_key) FROM infra_errors WHERE policy = 'harness' AND item_key NOT IN (SELECT trial_key FROM trials)")
sleep 2
left_procs=$(sort -u "$tmp/profiles.used" 2>/dev/null | while read -r d; do pgrep -f -- "--user-data-dir=$d" || true; done | wc -l)
left_dirs=$(sort -u "$tmp/profiles.used" 2>/dev/null | while read -r d; do if [ -e "$d" ]; then echo "$d"; fi; done | wc -l)
echo "soak: $trials trials asked ($layouts layouts), exit $status, $(( end - start )) s"
echo "browser kills:        $killed"
echo "trials stored:        $stored"
echo "failed attempts:      $attempts (retried, in infra_errors)"
echo "final infra failures: $failed"
grep -h "infra:" "$tmp/run.log" || true
# Flat or growing: the median RSS of the first and the last quarter of the run.
samples=$(( $(wc -l < "$out/rss.csv") - 1 ))
q=$(( samples / 4 > 0 ? samples / 4 : 1 ))
median() { # median of column $1 over the first (head) or last (tail) quarter
  tail -n +2 "$out/rss.csv" | "$2" -n "$q" | cut -d, -f"$1" | sort -n | sed -n "$(( (q + 1) / 2 ))p"
}
quarters="faultline $(( $(median 2 head) / 1024 )) -> $(( $(median 2 tail) / 1024 )) MiB, browser group $(( $(median 3 head) / 1024 )) -> $(( $(median 3 tail) / 1024 )) MiB"
echo "median RSS, first -> last quarter: $quarters"
echo "peak RSS:             faultline $(( peak_f / 1024 )) MiB, browser group $(( peak_b / 1024 )) MiB ($out/rss.csv: every second)"
echo "left behind:          $left_procs browser processes, $left_dirs profile directories"
if [ -f "$tmp/run/infra_retries.csv" ]; then
  echo "infra_retries.csv:"
  cat "$tmp/run/infra_retries.csv"
fi
