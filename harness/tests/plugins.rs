//! External verifiers and agents against real plugin processes (python3): protocol
//! conformance, the failure rules, no process left behind, and the ledger barrier.
//!
//! The test plugins live in `tests/plugins/`; the examples in `examples/plugins/`.

mod common;

use faultline::agent::{Agent, AgentView};
use faultline::config::{self, ConfigText, Overrides};
use faultline::engine::browser::{find_chromium, BrowserHandle};
use faultline::engine::liveness::InfraKind;
use faultline::engine::trial::run_trial;
use faultline::engine::{Engine, Scorer};
use faultline::experiment::RunRequest;
use faultline::plugin::agent::ExecAgent;
use faultline::plugin::policy::{pool, ExternalPolicy};
use faultline::plugin::PluginSpec;
use faultline_analysis::db::ResultsDb;
use faultline_policies::{Observation, VerificationPolicy};
use faultline_sites::FixtureServer;
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{InfraErrorKind, Instruction, PluginFailure, Size, TaskKind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plugin(name: &str) -> String {
    manifest_dir()
        .join("tests/plugins")
        .join(name)
        .display()
        .to_string()
}

fn example(name: &str) -> String {
    manifest_dir()
        .join("../examples/plugins")
        .join(name)
        .display()
        .to_string()
}

/// Python processes running one of this test's plugin scripts.
fn surviving(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-af", marker])
        .output()
        .expect("pgrep runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("python"))
        .map(str::to_string)
        .collect()
}

async fn run(out: &Path, text: &str, layouts: u32) -> ResultsDb {
    let text = ConfigText {
        name: "plugins.toml".into(),
        text: text.into(),
    };
    let overrides = Overrides {
        seed: None,
        layouts: Some(layouts),
        jobs: Some(2),
        faults: None,
        isolation: None,
    };
    let config = config::resolve(&text, &overrides).unwrap();
    faultline::experiment::run(RunRequest {
        out: out.to_path_buf(),
        resume: false,
        config,
        config_text: text,
        overrides,
        max_trials: None,
        max_episodes: None,
        progress: false,
        shard: None,
    })
    .await
    .expect("a run with broken plugins completes");
    ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap()
}

fn python_table(name: &str, script: &str, timeout_ms: u64) -> String {
    format!(
        "[[policy]]\nname = \"{name}\"\ncommand = [\"python3\", \"{script}\"]\ntimeout_ms = {timeout_ms}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_plugins_are_infrastructure_errors_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        r#"seed = 1
tasks = ["grid", "frame"]
policies = ["generic", "outcome", "good", "crash", "hang", "garbage", "unknown", "wrongver"]
faults = ["reference"]
[recovery]
enabled = true
layouts = 1
runs = 1
policies = ["good", "garbage"]
agent = "exec"
[exec]
command = ["python3", "AGENT", "broken-plugins-test"]
timeout_ms = 5000
"#,
    )
    .replace("AGENT", &example("agent_retry.py"));
    for (name, script) in [
        ("good", "good.py"),
        ("crash", "crash.py"),
        ("hang", "hang.py"),
        ("garbage", "garbage.py"),
        ("unknown", "unknown_verdict.py"),
        ("wrongver", "wrong_version.py"),
    ] {
        // Only the hanging plugin should meet its deadline; the others get room for a
        // Python start-up on a loaded machine (a 1.5 s limit timed `good` out at load ~20).
        let timeout_ms = if name == "hang" { 1500 } else { 20_000 };
        text.push_str(&python_table(name, &plugin(script), timeout_ms));
    }
    let db = run(dir.path(), &text, 2).await;

    let trials = db.trials().unwrap();
    assert!(trials.len() >= 6, "{} trials", trials.len());
    let verdicts = db.verdicts().unwrap();
    let infra = db.infra_errors().unwrap();
    let judged: BTreeSet<(&str, &str)> = verdicts
        .iter()
        .map(|v| (v.trial_key.as_str(), v.policy.as_str()))
        .collect();
    let failed: BTreeMap<(&str, &str), InfraErrorKind> = infra
        .iter()
        .filter(|e| e.item_key.starts_with("detection/"))
        .map(|e| ((e.item_key.as_str(), e.policy.as_str()), e.kind))
        .collect();
    // Per policy: how its trials ended, `None` for a verdict.
    let mut kinds: BTreeMap<&str, BTreeMap<Option<InfraErrorKind>, usize>> = BTreeMap::new();
    for t in &trials {
        for p in [
            "generic", "outcome", "good", "crash", "hang", "garbage", "unknown", "wrongver",
        ] {
            let key = (t.trial_key.as_str(), p);
            // Exactly one of a verdict and an infrastructure error, never both, never none.
            assert!(
                judged.contains(&key) != failed.contains_key(&key),
                "{key:?}: verdict {} infra {:?}",
                judged.contains(&key),
                failed.get(&key)
            );
            let kind = failed.get(&key).copied();
            *kinds.entry(p).or_default().entry(kind).or_default() += 1;
        }
    }
    let n = trials.len();
    // The built-ins and the good plugin judged everything.
    for p in ["generic", "outcome", "good"] {
        assert_eq!(kinds[p].get(&None), Some(&n), "{p}: {:?}", kinds[p]);
    }
    assert_eq!(
        kinds["garbage"].get(&Some(PluginFailure::Malformed.into())),
        Some(&n),
        "{:?}",
        kinds["garbage"]
    );
    assert_eq!(
        kinds["unknown"].get(&Some(PluginFailure::UnknownVerdict.into())),
        Some(&n),
        "{:?}",
        kinds["unknown"]
    );
    assert_eq!(
        kinds["wrongver"].get(&Some(PluginFailure::Protocol.into())),
        Some(&n),
        "{:?}",
        kinds["wrongver"]
    );
    // The crashing plugin judged some trials (two per incarnation) and crashed on others.
    assert!(
        kinds["crash"]
            .get(&Some(PluginFailure::Crash.into()))
            .is_some_and(|&c| c > 0),
        "{:?}",
        kinds["crash"]
    );
    assert!(
        kinds["crash"].get(&None).is_some_and(|&c| c >= 2),
        "{:?}",
        kinds["crash"]
    );
    // The hanging one answered its first request per incarnation and timed out after.
    assert!(
        kinds["hang"]
            .get(&Some(PluginFailure::Timeout.into()))
            .is_some_and(|&c| c > 0),
        "{:?}",
        kinds["hang"]
    );
    assert!(
        kinds["hang"].get(&None).is_some_and(|&c| c > 0),
        "{:?}",
        kinds["hang"]
    );
    // Reasons and stderr tails are stored.
    let crash = infra
        .iter()
        .find(|e| e.kind == PluginFailure::Crash.into())
        .unwrap();
    assert!(crash.stderr_tail.contains("Traceback: boom"), "{crash:?}");
    assert!(crash.reason.contains("exited"), "{crash:?}");
    let version = infra
        .iter()
        .find(|e| e.kind == PluginFailure::Protocol.into())
        .unwrap();
    assert!(version.reason.contains("handshake"), "{version:?}");
    assert!(
        version.stderr_tail.contains("speaking version 2"),
        "{version:?}"
    );
    assert!(infra
        .iter()
        .any(|e| e.kind == PluginFailure::Timeout.into() && e.stderr_tail.contains("hanging")));

    // Recovery: the exec agent ran every `good` episode; every `garbage` episode is an
    // infrastructure error and is not stored as an episode.
    let episodes = db.episodes().unwrap();
    assert!(!episodes.is_empty());
    assert!(episodes
        .iter()
        .all(|e| e.policy == "good" && e.agent == "exec"));
    assert!(
        episodes
            .iter()
            .all(|e| e.stop_reason.name() != "agent_error"),
        "{:?}",
        episodes
            .iter()
            .map(|e| (&e.episode_key, &e.error))
            .collect::<Vec<_>>()
    );
    let garbage_episodes = infra
        .iter()
        .filter(|e| e.item_key.starts_with("recovery/") && e.policy == "garbage")
        .count();
    assert_eq!(garbage_episodes, episodes.len());

    // The report counts them apart.
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("## Infrastructure errors"), "{report}");
    let csv = std::fs::read_to_string(dir.path().join("infra_errors.csv")).unwrap();
    assert!(
        csv.contains(&format!("garbage,detection,malformed,{n},{n}")),
        "{csv}"
    );
    // A policy that never judged has no detection rows; the others do.
    let detection = std::fs::read_to_string(dir.path().join("detection.csv")).unwrap();
    assert!(
        detection.lines().any(|l| l.contains(",good,")),
        "{detection}"
    );
    assert!(
        !detection.lines().any(|l| l.contains(",garbage,")),
        "{detection}"
    );

    drop(db);
    // Its own scripts only: other tests in this file run plugins at the same time.
    for script in [
        "good.py",
        "crash.py",
        "hang.py",
        "garbage.py",
        "unknown_verdict.py",
        "wrong_version.py",
    ] {
        let left = surviving(&plugin(script));
        assert!(left.is_empty(), "plugin processes survived: {left:?}");
    }
    // Another test runs the same example agent at the same time: this run's carry a
    // marker argument of their own.
    let left = surviving("agent_retry.py broken-plugins-test");
    assert!(left.is_empty(), "agent processes survived: {left:?}");
}

/// The example verifier compares every frame's DOM; `generic` only the top document's.
/// On every task without a child frame they must agree trial by trial; on the frame task
/// the example sees the row selected inside the iframe, so it may say `success` where
/// `generic` says `no_change` (never the other way round).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_verifier_reproduces_generic_except_inside_frames() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "seed = 1\npolicies = [\"generic\", \"changed\"]\nfaults = [\"reference\"]\n{}",
        python_table("changed", &example("verify_changed.py"), 10_000)
    );
    let db = run(dir.path(), &text, 2).await;
    assert!(db.infra_errors().unwrap().is_empty());
    let verdicts = db.verdicts().unwrap();
    let mut by: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for v in &verdicts {
        by.entry(v.trial_key.as_str())
            .or_default()
            .insert(v.policy.as_str(), v.verdict.name());
    }
    let mut frame_differs = 0;
    for t in db.trials().unwrap() {
        let v = &by[t.trial_key.as_str()];
        let (g, c) = (v["generic"], v["changed"]);
        if t.task.name() == "frame" {
            assert!(
                g == c || (g == "no_change" && c == "success"),
                "{}",
                t.trial_key
            );
            frame_differs += usize::from(g != c);
        } else {
            assert_eq!(g, c, "{}", t.trial_key);
        }
    }
    // A click on a row inside the frame changes only the frame's document.
    assert!(frame_differs > 0);
    drop(db);
    assert!(surviving("verify_changed.py").is_empty());
}

/// The barrier holds for a plugin: its environment and arguments are what the config
/// gave, the ledger token is in nothing it receives, and the ledger endpoint it finds
/// from the evidence URLs refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_never_receives_the_ledger_token_and_the_ledger_refuses_it() {
    // Secrets in the harness's own environment must not be passed on.
    std::env::set_var("FAULTLINE_PLUGIN_PROBE", "probe-secret-1");
    std::env::set_var("OPENAI_API_KEY", "sk-probe-secret-2");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("barrier.jsonl");
    let chromium = find_chromium(None).unwrap();
    let (server, key) = FixtureServer::start_loopback().await.unwrap();
    let token = key.bearer_token();
    let browser = BrowserHandle::launch(&chromium).await.unwrap();
    let cfg = common::config(1, 2);
    let spec = PluginSpec {
        name: "barrier".into(),
        command: vec![
            "python3".into(),
            plugin("barrier.py"),
            dump.display().to_string(),
        ],
        timeout_ms: 20_000,
    };
    let policy: Box<dyn VerificationPolicy> =
        Box::new(ExternalPolicy::new(pool(spec, cfg.viewport), cfg.viewport));
    let pages = browser.page_pool(
        cfg.viewport,
        faultline::engine::browser::PoolSize::fixed(2),
        faultline::engine::browser::SiteOrigins::of(&server),
        cfg.isolation,
    );
    let engine = Engine {
        browsers: faultline::engine::Browsers::fixed(browser, pages),
        server: Arc::new(server),
        scorer: Arc::new(Scorer::new(key)),
        policies: Arc::new(vec![policy]),
        policy_registry: faultline_policies::Registry::default(),
        timing: cfg.timing,
        liveness: cfg.liveness,
        viewport: cfg.viewport,
    };
    let decisions = embedded_default().unwrap();
    for task in [TaskKind::Grid, TaskKind::Frame] {
        let d = decisions.find(task, DEFAULT_ROOT_SEED, 0).unwrap();
        let r = run_trial(&engine, d, None).await.unwrap();
        assert!(r.judgements[0].1.is_ok(), "{:?}", r.judgements[0].1);
    }
    drop(engine);
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(
        !text.contains(&token),
        "the ledger token reached the plugin"
    );
    assert!(
        !text.contains("probe-secret"),
        "a harness secret reached the plugin"
    );
    let mut requests = 0;
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let env = r["env"].as_object().unwrap();
        // Only PATH, HOME and LANG are passed on; an interpreter launcher (a pyenv shim,
        // say) may add its own variables, but none of the harness's reach the plugin.
        for k in ["HOME", "LANG"] {
            assert_eq!(
                env.get(k).and_then(|v| v.as_str()),
                std::env::var(k).ok().as_deref(),
                "{k}"
            );
        }
        // A launcher may prepend its own directories to PATH.
        let path = std::env::var("PATH").unwrap();
        assert!(env["PATH"].as_str().unwrap().ends_with(&path), "{env:?}");
        assert!(
            env.keys().all(|k| !["FAULTLINE", "OPENAI", "CARGO", "RUST"]
                .iter()
                .any(|p| k.starts_with(p))),
            "{env:?}"
        );
        assert_eq!(r["argv"].as_array().unwrap().len(), 2);
        if r.get("request").is_some() {
            requests += 1;
            assert!(r["ledger_url"].as_str().unwrap().contains("/api/ledger/"));
            assert_eq!(r["no_token"], 401, "{r}");
            assert_eq!(r["guessed_token"], 401, "{r}");
        }
    }
    assert_eq!(requests, 2);
    assert!(surviving("barrier.py").is_empty());
}

/// Regression (an exec agent's crash was scored as a failed recovery): an agent process
/// that crashes is an infrastructure failure (`agent_process`) with its stderr, an
/// unusable answer is the agent's own error, and the next reply starts a fresh process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_crashing_agent_is_an_infrastructure_failure_and_is_restarted() {
    let script = tempfile::Builder::new().suffix(".py").tempfile().unwrap();
    std::fs::write(
        script.path(),
        "import json, sys\nfor line in sys.stdin:\n    msg = json.loads(line)\n    if 'protocol' in msg:\n        print(json.dumps({'protocol': 'faultline.agent', 'version': 1}), flush=True)\n    elif msg['view']['step'] == 1:\n        sys.stderr.write('agent fell over\\n'); sys.exit(1)\n    elif msg['view']['step'] == 2:\n        print(json.dumps({'id': msg['id'], 'reply': 'stop()', 'format': 'cobol'}), flush=True)\n    else:\n        print(json.dumps({'id': msg['id'], 'reply': 'stop()'}), flush=True)\n",
    )
    .unwrap();
    let agent = ExecAgent::new(PluginSpec {
        name: "exec".into(),
        command: vec!["python3".into(), script.path().display().to_string()],
        timeout_ms: 5000,
    });
    let instruction = Instruction {
        task: TaskKind::Grid,
        text: "Click the button \"Item 3\".".into(),
    };
    let observation = Observation {
        png: vec![1, 2, 3],
        size: Size::new(900, 600),
        text: "Item 3".into(),
    };
    let view = |step| AgentView {
        instruction: &instruction,
        observation: &observation,
        feedback: None,
        history: &[],
        budget_left: 3,
        step,
        image: Size::new(900, 600),
        seed: 1,
    };
    let e = agent.reply(view(1)).await.unwrap_err();
    assert_eq!(e.infra, Some(InfraKind::AgentProcess), "{e}");
    let e = e.to_string();
    assert!(e.contains("crash") && e.contains("agent fell over"), "{e}");
    let e = agent.reply(view(2)).await.unwrap_err();
    assert_eq!(
        e.infra, None,
        "an unusable answer is the agent's own failure"
    );
    assert!(e.to_string().contains("unsupported action format"), "{e}");
    assert_eq!(agent.reply(view(3)).await.unwrap().text, "stop()");
    assert_eq!(agent.pool().started(), 3);
    drop(agent);
    let marker = script.path().display().to_string();
    assert!(surviving(&marker).is_empty());
}

/// Regression (an exec agent's crash was stored as an `agent_error` episode, a failed
/// recovery): an agent process that crashes once, mid-phase, is an `agent_process`
/// infrastructure failure; the episode is retried with a fresh process and the recovery
/// table equals a run whose agent never crashed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_agent_process_that_crashes_mid_phase_is_retried_not_scored() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("crash_once.py");
    let marker = dir.path().join("crashed");
    std::fs::write(
        &wrapper,
        format!(
            "import json, os, sys\nsys.path.insert(0, {examples:?})\nimport agent_retry\nfor line in sys.stdin:\n    msg = json.loads(line)\n    if 'protocol' in msg:\n        print(json.dumps({{'protocol': 'faultline.agent', 'version': 1}}), flush=True)\n        continue\n    if not os.path.exists({marker:?}):\n        open({marker:?}, 'w').close()\n        sys.stderr.write('agent fell over once\\n'); sys.exit(3)\n    print(json.dumps({{'id': msg['id'], 'reply': agent_retry.act(msg['view'])}}), flush=True)\n",
            examples = manifest_dir().join("../examples/plugins").display().to_string(),
            marker = marker.display().to_string(),
        ),
    )
    .unwrap();
    let config = |agent: &str| {
        format!(
            "seed = 1\ntasks = [\"grid\"]\npolicies = [\"unverified\", \"outcome\"]\nfaults = [\"reference\"]\n[recovery]\nenabled = true\nlayouts = 2\nruns = 1\npolicies = [\"unverified\", \"outcome\"]\nagent = \"exec\"\n[exec]\ncommand = [\"python3\", {agent:?}]\ntimeout_ms = 20000\n"
        )
    };
    let calm = dir.path().join("calm");
    let crashed = dir.path().join("crashed-run");
    run(&calm, &config(&example("agent_retry.py")), 2).await;
    let db = run(&crashed, &config(&wrapper.display().to_string()), 2).await;
    assert!(marker.exists(), "the agent crashed once");
    let infra = db.infra_errors().unwrap();
    assert_eq!(infra.len(), 1, "{infra:?}");
    let row = &infra[0];
    assert!(
        row.policy == "harness"
            && row.kind == InfraKind::AgentProcess.into()
            && row.attempt == 1
            && row.item_key.starts_with("recovery/")
            && row.reason.contains("agent fell over once"),
        "{row:?}"
    );
    assert!(db
        .episodes()
        .unwrap()
        .iter()
        .all(|e| e.stop_reason.name() != "agent_error"));
    for table in ["recovery.csv", "recovery_summary.csv"] {
        assert_eq!(
            std::fs::read_to_string(calm.join(table)).unwrap(),
            std::fs::read_to_string(crashed.join(table)).unwrap(),
            "{table} differs from the run whose agent never crashed"
        );
    }
    assert!(surviving(&wrapper.display().to_string()).is_empty());
}

/// Regression (an exec agent that asked for a `wait` at the cap was SIGKILLed during the
/// wait and every retry failed as `agent_process`): the agent thinks for most of its
/// timeout, then asks for a 10 s wait, longer than its timeout and longer than the idle
/// life of the thread that started it. The harness's wait is not the agent's time: the
/// episode is stored as the agent ended it, with no infrastructure error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_agent_waiting_at_the_cap_after_a_slow_answer_is_not_killed() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "seed = 1\ntasks = [\"grid\"]\npolicies = [\"unverified\"]\nfaults = [\"reference\"]\n[recovery]\nenabled = true\nlayouts = 1\nruns = 1\npolicies = [\"unverified\"]\nagent = \"exec\"\nmax_wait_ms = 10000\n[exec]\ncommand = [\"python3\", {script:?}, \"3\"]\ntimeout_ms = 5000\n",
        script = plugin("wait_at_cap.py"),
    );
    let db = run(dir.path(), &text, 1).await;
    assert!(
        db.infra_errors().unwrap().is_empty(),
        "{:?}",
        db.infra_errors().unwrap()
    );
    let episodes = db.episodes().unwrap();
    assert!(!episodes.is_empty());
    for e in &episodes {
        assert_eq!(e.stop_reason.name(), "stopped", "{e:?}");
        let steps = db.episode_steps(&e.episode_key).unwrap();
        let replies: Vec<&str> = steps.iter().skip(1).map(|s| s.reply.as_str()).collect();
        assert_eq!(replies, ["wait(10000)", "stop()"], "{}", e.episode_key);
    }
    drop(db);
    assert!(surviving("wait_at_cap.py").is_empty());
}

/// Regression (a verifier's 50 MB message was stored verbatim with every verdict): the
/// message is cut at read time and to 16 KiB, with a marker saying how much was cut, and
/// the verdict stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_verifiers_huge_message_is_stored_truncated_with_its_verdict() {
    const SIZE: usize = 8 << 20;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "seed = 1\ntasks = [\"grid\"]\npolicies = [\"generic\", \"huge\"]\nfaults = [\"reference\"]\n[[policy]]\nname = \"huge\"\ncommand = [\"python3\", {:?}, \"message\", \"{SIZE}\"]\ntimeout_ms = 20000\n",
        plugin("huge.py")
    );
    let db = run(dir.path(), &text, 1).await;
    assert!(db.infra_errors().unwrap().is_empty());
    let verdicts = db.verdicts().unwrap();
    // On a page without frames `generic` judges as the plugin's `good` logic does.
    let generic: BTreeMap<&str, &str> = verdicts
        .iter()
        .filter(|v| v.policy == "generic")
        .map(|v| (v.trial_key.as_str(), v.verdict.name()))
        .collect();
    let huge: Vec<_> = verdicts.iter().filter(|v| v.policy == "huge").collect();
    assert!(!huge.is_empty());
    for v in huge {
        assert_eq!(
            v.verdict.name(),
            generic[v.trial_key.as_str()],
            "{}",
            v.trial_key
        );
        let kept = faultline::plugin::policy::MAX_MESSAGE_BYTES;
        assert_eq!(
            v.message,
            format!("{}… [truncated: {} bytes]", "M".repeat(kept), SIZE - kept)
        );
    }
    drop(db);
    assert!(surviving("huge.py message").is_empty());
}

/// Regression (an agent typing 1 MB had every such reply stored whole, and the parser
/// read it): an over-long reply is the agent's own parse error, stored cut, never an
/// infrastructure failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_exec_agents_huge_reply_is_a_parse_error_not_an_infra_failure() {
    const SIZE: usize = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "seed = 1\ntasks = [\"grid\"]\npolicies = [\"unverified\"]\nfaults = [\"reference\"]\n[recovery]\nenabled = true\nlayouts = 1\nruns = 1\npolicies = [\"unverified\"]\nagent = \"exec\"\n[exec]\ncommand = [\"python3\", {:?}, \"reply\", \"{SIZE}\"]\ntimeout_ms = 20000\n",
        plugin("huge.py")
    );
    let db = run(dir.path(), &text, 1).await;
    assert!(db.infra_errors().unwrap().is_empty());
    let episodes = db.episodes().unwrap();
    assert!(!episodes.is_empty());
    for e in &episodes {
        assert_eq!(e.stop_reason.name(), "parse_error", "{e:?}");
        let steps = db.episode_steps(&e.episode_key).unwrap();
        let last = steps.last().unwrap();
        let limit = faultline::engine::roundtrip::parse::MAX_REPLY_BYTES;
        assert!(
            last.parse_error
                .as_deref()
                .unwrap()
                .contains(&format!("over the {limit}-byte limit")),
            "{:?}",
            last.parse_error
        );
        assert!(last.reply.len() < limit + 64, "{} bytes", last.reply.len());
        assert!(last.reply.ends_with(" bytes]"), "{}", &last.reply[limit..]);
    }
    drop(db);
    assert!(surviving("huge.py reply").is_empty());
}

/// Regression (the JSON-lines reader buffered whatever a process wrote before a newline):
/// a verifier writing an endless line is failed as a `protocol` error at the line limit.
#[test]
fn regression_a_plugin_writing_an_endless_line_is_a_protocol_failure() {
    let pool = pool(
        PluginSpec {
            name: "endless".into(),
            command: vec!["python3".into(), plugin("huge.py"), "endless".into()],
            timeout_ms: 20_000,
        },
        Size::new(900, 600),
    );
    let e = pool
        .with_process(|p| p.request(serde_json::json!({"type": "judge", "evidence": {}})))
        .unwrap_err();
    assert_eq!(e.kind, PluginFailure::Protocol, "{e:?}");
    assert!(
        e.reason
            .contains(&format!("over {} bytes", faultline::plugin::MAX_LINE_BYTES)),
        "{e:?}"
    );
    drop(pool);
    assert!(surviving("huge.py endless").is_empty());
}

/// Regression (a verifier whose command does not exist turned every judgement into an
/// infrastructure error silently: exit 0, nothing on the console): the run says so once
/// on stderr, naming the verifier and its command, and its summary counts the
/// judgements that were not made.
#[test]
fn regression_a_verifier_that_cannot_start_is_said_once_on_stderr_and_counted_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-verifier");
    let cfg = dir.path().join("missing.toml");
    std::fs::write(
        &cfg,
        format!(
            "seed = 1\ntasks = [\"grid\"]\nlayouts = 1\npolicies = [\"generic\", \"absent\"]\nfaults = [\"reference\"]\n[recovery]\nenabled = false\n[[policy]]\nname = \"absent\"\ncommand = [{:?}]\n",
            missing.display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--config", cfg.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "{stdout}{stderr}");
    let db = ResultsDb::open_read_only(&out.join("results.sqlite")).unwrap();
    let errors = db.infra_errors().unwrap();
    let trials = db.trials().unwrap().len();
    assert!(trials > 1);
    assert_eq!(errors.len(), trials, "one error per judgement: {errors:?}");
    // Once, naming the verifier and the command it could not start.
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(&missing.display().to_string()))
        .collect();
    assert_eq!(said.len(), 1, "said once: {stderr}");
    assert!(said[0].contains("`absent`"), "{stderr}");
    assert!(
        stdout.contains(&format!("{trials} judgement(s) a policy could not make")),
        "{stdout}"
    );
}

/// Regression: plugins run in their own process group with a parent-death signal, but a
/// process that calls `setsid` leaves the group, and its parent's signal is not its own:
/// a verifier's detached child and its double-forked daemon outlived the run. The
/// `faultline` binary adopts every orphaned descendant and kills what is left at its end.
#[test]
fn regression_a_plugins_detached_children_do_not_outlive_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("detached.pids");
    let config = dir.path().join("detaches.toml");
    let text = format!(
        "seed = 1\ntasks = [\"grid\"]\npolicies = [\"outcome\", \"detaches\"]\nfaults = [\"reference\"]\nlayouts = 1\njobs = 1\n[recovery]\nenabled = false\n[[policy]]\nname = \"detaches\"\ncommand = [\"python3\", \"{}\", \"{}\"]\ntimeout_ms = 20000\n",
        plugin("detaches.py"),
        pids.display()
    );
    std::fs::write(&config, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let detached: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(detached.len(), 2, "the plugin detached two processes");
    // Ours if its command line still names this test's pid file (a pid can be reused).
    let survivors: Vec<u32> = detached
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&*pids.to_string_lossy()))
        })
        .collect();
    for pid in &survivors {
        // SAFETY: only signals processes this test's plugin started.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    assert!(survivors.is_empty(), "outlived the run: {survivors:?}");
}

/// An exec agent is deterministic only when its handshake says so: `true` is believed,
/// an absent claim means its runs can differ, and a claim that is not a boolean is a
/// protocol error (so not believed either). The process that answered is kept for the
/// first reply.
#[test]
fn an_exec_agent_is_deterministic_only_when_its_handshake_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let agent = |claim: &str| {
        let script = dir.path().join(format!("agent_{}.py", claim.len()));
        std::fs::write(
            &script,
            format!(
                "import json, sys\nfor line in sys.stdin:\n    msg = json.loads(line)\n    if 'protocol' in msg:\n        print(json.dumps({{'protocol': 'faultline.agent', 'version': 1{claim}}}), flush=True)\n    else:\n        print(json.dumps({{'id': msg['id'], 'reply': 'stop()'}}), flush=True)\n"
            ),
        )
        .unwrap();
        ExecAgent::new(PluginSpec {
            name: "exec".into(),
            command: vec!["python3".into(), script.display().to_string()],
            timeout_ms: 20000,
        })
    };
    let declared = agent(", 'deterministic': True");
    assert!(declared.deterministic());
    assert!(declared.deterministic());
    assert_eq!(declared.pool().started(), 1, "one process answered both");
    let silent = agent("");
    assert!(!silent.deterministic());
    let wrong = agent(", 'deterministic': 'yes'");
    assert!(!wrong.deterministic());
    let e = wrong
        .pool()
        .with_process(|_| Ok(()))
        .expect_err("a non-boolean claim fails the handshake");
    assert!(
        e.reason.contains("`deterministic` must be true or false"),
        "{e:?}"
    );
}
