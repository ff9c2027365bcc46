//! Cost accounting: where a trial's or an episode's wall time and CPU go, stage by stage,
//! and what a whole phase cost (CPU of faultline and of its Chromium, peak memory).
//!
//! Every trial and episode carries a [`StageCosts`]: for each [`Stage`] the wall time
//! spent in it and the CPU time the process tree (faultline plus every Chromium process
//! it started) used meanwhile. Wall time is exact per item. CPU time is read from the
//! kernel at the stage's edges (`CLOCK_PROCESS_CPUTIME_ID` for faultline, which includes
//! its fixture server; `/proc/<pid>/stat` user + system time, with reaped children, for
//! every process in a browser's process group). It is therefore exact when one item runs
//! at a time (`--jobs 1`, what `just bench` profiles with); when items run concurrently a
//! stage's CPU figure also counts what the other items (and the page pool) did during the
//! stage, so stage CPU summed over items overstates, and only the phase totals
//! ([`PhaseCost`]) are meaningful, per item as total CPU over items.
//!
//! Most stages run inside the attempt whose wall time is the item's stored duration, so
//! they sum to at most that duration. Three do not (see [`Stage::within_attempt`]):
//! [`Stage::SetupAhead`] (the page pool opened the item's context and page ahead of
//! time, while other items ran), [`Stage::Retried`] (the attempts an infrastructure
//! failure ended before the one that was stored) and [`Stage::Storage`] (after the item).
//!
//! A browser that closes (or dies and is replaced) keeps counting: the CPU its processes
//! had used when it was closed is kept as retired time, so a phase's total is not lost to
//! a restart. The CPU a browser used between its last sample and a crash is not seen.
//!
//! These numbers are stored apart from the results (their own tables, never in a CSV or
//! a table of the report): two runs with the same seed and config have the same results
//! and different costs.

use std::sync::Mutex;
use std::time::Instant;

pub use faultline_analysis::costs::Stage;

/// Wall and CPU milliseconds per stage, summed over every time the stage ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageCosts {
    wall_ms: [f64; Stage::ALL.len()],
    cpu_ms: [f64; Stage::ALL.len()],
}

impl StageCosts {
    /// Adds one run of `stage`.
    pub fn add(&mut self, stage: Stage, wall_ms: f64, cpu_ms: f64) {
        let i = stage as usize;
        self.wall_ms[i] += wall_ms;
        self.cpu_ms[i] += cpu_ms;
    }

    /// Moves `wall_ms` of wall time from one stage to another (a timer that ran inside a
    /// span of another stage, e.g. an agent's `wait` inside the actions).
    pub fn move_wall(&mut self, from: Stage, to: Stage, wall_ms: f64) {
        let moved = wall_ms.min(self.wall_ms[from as usize]).max(0.0);
        self.wall_ms[from as usize] -= moved;
        self.wall_ms[to as usize] += moved;
    }

    /// Adds every stage of `other`.
    pub fn merge(&mut self, other: &StageCosts) {
        for (mine, theirs) in self.wall_ms.iter_mut().zip(other.wall_ms) {
            *mine += theirs;
        }
        for (mine, theirs) in self.cpu_ms.iter_mut().zip(other.cpu_ms) {
            *mine += theirs;
        }
    }

    /// `(stage, wall ms, CPU ms)` of every stage that ran.
    pub fn rows(&self) -> Vec<(Stage, f64, f64)> {
        Stage::ALL
            .iter()
            .map(|s| (*s, self.wall_ms[*s as usize], self.cpu_ms[*s as usize]))
            .filter(|(_, w, c)| *w > 0.0 || *c > 0.0)
            .collect()
    }
}

/// A stage being timed: [`Span::end`] adds it to a [`StageCosts`].
#[must_use = "a span counts only when it is ended"]
pub struct Span {
    stage: Stage,
    started: Instant,
    cpu: f64,
}

impl Span {
    /// Starts timing `stage`.
    pub fn start(stage: Stage) -> Span {
        Span {
            stage,
            started: Instant::now(),
            cpu: tree_cpu().total_ms(),
        }
    }

    /// Stops timing and adds the span to `costs`.
    pub fn end(self, costs: &mut StageCosts) {
        let wall = self.started.elapsed().as_secs_f64() * 1000.0;
        let cpu = (tree_cpu().total_ms() - self.cpu).max(0.0);
        costs.add(self.stage, wall, cpu);
    }
}

/// CPU time used so far: this process, and every process of the registered browsers'
/// process groups (including children they have already reaped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuSample {
    /// faultline itself (every thread).
    pub ours_ms: f64,
    /// Chromium: the browser process and its children.
    pub browser_ms: f64,
}

impl CpuSample {
    /// Ours plus the browser's.
    pub fn total_ms(&self) -> f64 {
        self.ours_ms + self.browser_ms
    }
}

/// What a phase cost: its wall time, the CPU of faultline and of Chromium, peak memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseCost {
    /// CPU used during the phase.
    pub cpu: CpuSample,
    /// faultline's peak resident set since it started, in KiB.
    pub peak_rss_ours_kib: u64,
    /// The largest sampled sum of the browsers' processes' resident sets, in KiB
    /// (shared pages are counted once per process, so this overstates a little).
    pub peak_rss_browser_kib: u64,
}

/// The process groups of the browsers this process runs, and their members as of the
/// last scan of `/proc`.
struct Tree {
    groups: Vec<i32>,
    members: Vec<i32>,
    scanned: Option<Instant>,
    peak_rss_kib: u64,
    /// CPU ticks of browsers that were closed, as of their closing.
    retired_ticks: u64,
}

static TREE: Mutex<Tree> = Mutex::new(Tree {
    groups: Vec::new(),
    members: Vec::new(),
    scanned: None,
    peak_rss_kib: 0,
    retired_ticks: 0,
});

/// How often the browsers' process list is refreshed (processes come and go with
/// contexts; a process that ended was reaped by a parent that is still listed, and its
/// CPU time is in that parent's children's time).
const RESCAN_MS: u128 = 250;

/// Counts the process group led by `pid` (a browser started in its own group) as ours.
pub fn register_browser(pid: u32) {
    let mut t = TREE.lock().unwrap_or_else(|e| e.into_inner());
    t.groups.push(pid as i32);
    t.scanned = None;
}

/// Stops following the process group led by `pid` (just before its browser is
/// killed); the CPU its processes used so far stays counted. Unknown groups are ignored.
pub fn unregister_browser(pid: u32) {
    let mut t = TREE.lock().unwrap_or_else(|e| e.into_inner());
    let group = pid as i32;
    if !t.groups.contains(&group) {
        return;
    }
    let (ticks, _) = scan(&[group]).1;
    t.retired_ticks += ticks;
    t.groups.retain(|g| *g != group);
    t.scanned = None;
}

/// Every process of `groups` now, and their summed (CPU ticks, resident pages).
fn scan(groups: &[i32]) -> (Vec<i32>, (u64, u64)) {
    let mut members = Vec::new();
    let (mut ticks, mut rss_pages) = (0u64, 0u64);
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some((pgrp, cpu, rss)) = read_stat(pid) {
                if groups.contains(&pgrp) {
                    members.push(pid);
                    ticks += cpu;
                    rss_pages += rss;
                }
            }
        }
    }
    (members, (ticks, rss_pages))
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn page_kib() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64 / 1024
    } else {
        4
    }
}

/// `/proc/<pid>/stat` fields after the command name: (pgrp, CPU ticks incl. reaped
/// children, resident pages).
fn read_stat(pid: i32) -> Option<(i32, u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is f[0]; pgrp is field 5, utime..cstime 14..17, rss 24.
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    let pgrp = f.get(2)?.parse::<i32>().ok()?;
    let ticks = num(11)? + num(12)? + num(13)? + num(14)?;
    Some((pgrp, ticks, num(21)?))
}

/// This process's CPU time (every thread) in milliseconds.
fn own_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0;
    if ok {
        ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
    } else {
        0.0
    }
}

/// CPU used so far by this process and by the registered browsers.
pub fn tree_cpu() -> CpuSample {
    let ours_ms = own_cpu_ms();
    let mut t = TREE.lock().unwrap_or_else(|e| e.into_inner());
    let retired = t.retired_ticks;
    if t.groups.is_empty() {
        return CpuSample {
            ours_ms,
            browser_ms: ticks_to_ms(retired),
        };
    }
    let stale = t
        .scanned
        .is_none_or(|s| s.elapsed().as_millis() >= RESCAN_MS);
    let mut ticks = 0u64;
    let mut rss_pages = 0u64;
    if stale {
        let (members, (t_ticks, t_rss)) = scan(&t.groups);
        (ticks, rss_pages) = (t_ticks, t_rss);
        t.members = members;
        t.scanned = Some(Instant::now());
    } else {
        let groups = t.groups.clone();
        for pid in &t.members {
            if let Some((pgrp, cpu, rss)) = read_stat(*pid) {
                if groups.contains(&pgrp) {
                    ticks += cpu;
                    rss_pages += rss;
                }
            }
        }
    }
    t.peak_rss_kib = t.peak_rss_kib.max(rss_pages * page_kib());
    CpuSample {
        ours_ms,
        browser_ms: ticks_to_ms(ticks + retired),
    }
}

fn ticks_to_ms(ticks: u64) -> f64 {
    ticks as f64 * 1000.0 / ticks_per_second()
}

/// The largest sum of the browsers' resident sets seen so far, in KiB; resets it.
pub fn take_peak_browser_rss_kib() -> u64 {
    let mut t = TREE.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut t.peak_rss_kib)
}

/// This process's peak resident set since it started, in KiB.
pub fn peak_rss_ours_kib() -> u64 {
    // SAFETY: `usage` is a valid rusage to write into.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
        usage.ru_maxrss.max(0) as u64
    } else {
        0
    }
}

/// Measures a phase: CPU between [`PhaseMeter::start`] and [`PhaseMeter::finish`], with
/// the browsers' memory sampled every 200 ms meanwhile.
pub struct PhaseMeter {
    cpu: CpuSample,
    sampler: Option<tokio::task::JoinHandle<()>>,
}

impl PhaseMeter {
    /// Starts measuring (inside a Tokio runtime).
    pub fn start() -> PhaseMeter {
        take_peak_browser_rss_kib();
        let sampler = tokio::runtime::Handle::try_current().ok().map(|rt| {
            rt.spawn(async {
                loop {
                    tree_cpu();
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            })
        });
        PhaseMeter {
            cpu: tree_cpu(),
            sampler,
        }
    }

    /// What the phase cost.
    pub fn finish(mut self) -> PhaseCost {
        if let Some(s) = self.sampler.take() {
            s.abort();
        }
        let now = tree_cpu();
        PhaseCost {
            cpu: CpuSample {
                ours_ms: now.ours_ms - self.cpu.ours_ms,
                browser_ms: (now.browser_ms - self.cpu.browser_ms).max(0.0),
            },
            peak_rss_ours_kib: peak_rss_ours_kib(),
            peak_rss_browser_kib: take_peak_browser_rss_kib(),
        }
    }
}

impl Drop for PhaseMeter {
    fn drop(&mut self) {
        if let Some(s) = self.sampler.take() {
            s.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_add_up_per_stage() {
        let mut a = StageCosts::default();
        a.add(Stage::Capture, 10.0, 4.0);
        a.add(Stage::Capture, 5.0, 1.0);
        let mut b = StageCosts::default();
        b.add(Stage::Settle, 120.0, 0.0);
        a.merge(&b);
        assert_eq!(
            a.rows(),
            vec![(Stage::Settle, 120.0, 0.0), (Stage::Capture, 15.0, 5.0)]
        );
    }

    #[test]
    fn a_wait_moves_from_actions_to_settle_but_never_below_zero() {
        let mut c = StageCosts::default();
        c.add(Stage::Actions, 300.0, 20.0);
        c.move_wall(Stage::Actions, Stage::Settle, 250.0);
        assert_eq!(
            c.rows(),
            vec![(Stage::Actions, 50.0, 20.0), (Stage::Settle, 250.0, 0.0)]
        );
        // More than the stage holds: only what it holds moves.
        c.move_wall(Stage::Actions, Stage::Settle, 1000.0);
        assert_eq!(
            c.rows(),
            vec![(Stage::Actions, 0.0, 20.0), (Stage::Settle, 300.0, 0.0)]
        );
    }

    #[test]
    fn a_span_adds_its_wall_time_to_its_stage() {
        let mut c = StageCosts::default();
        let span = Span::start(Stage::Settle);
        std::thread::sleep(std::time::Duration::from_millis(30));
        span.end(&mut c);
        let rows = c.rows();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].0, Stage::Settle);
        assert!(rows[0].1 >= 30.0, "{rows:?}");
        assert!(rows[0].2 >= 0.0);
    }

    #[test]
    fn a_closed_process_group_keeps_its_cpu_time() {
        use std::os::unix::process::CommandExt;
        // A process group that burns some CPU, then idles.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 30",
            ])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        register_browser(pid);
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        let mut seen = 0.0;
        while Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(300));
            seen = tree_cpu().browser_ms;
            if seen >= 100.0 {
                break;
            }
        }
        assert!(
            seen >= 100.0,
            "the group's CPU time was never seen: {seen} ms"
        );
        unregister_browser(pid);
        let _ = child.kill();
        let _ = child.wait();
        // Gone from /proc, still counted.
        assert!(tree_cpu().browser_ms >= seen, "{seen}");
    }

    #[test]
    fn our_cpu_time_grows_with_work() {
        let before = tree_cpu();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(tree_cpu().ours_ms > before.ours_ms);
        assert!(peak_rss_ours_kib() > 0);
    }
}
