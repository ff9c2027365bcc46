//! The reference external harness, and `faultline env` serving a run to a harness started
//! by hand: what the environment API's tests share.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Playwright reference harness.
pub fn reference_harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/harnesses/playwright_harness.py")
}

/// The `[harness] command` that runs the reference harness with `flags` (screenshots off).
pub fn reference_command(flags: &[&str]) -> Vec<String> {
    let mut command = vec![
        "python3".to_string(),
        reference_harness().display().to_string(),
        "--no-shots".to_string(),
    ];
    command.extend(flags.iter().map(|f| f.to_string()));
    command
}

/// `faultline env` serving a run; the API's URL and token as it announced them. The
/// process is killed when this is dropped.
pub struct Env {
    child: std::process::Child,
    pub url: String,
    pub token: String,
    /// Kept open: the process may print more.
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Env {
    /// `POST {url}{path}` with the run's token and `body` as JSON, ready to send.
    pub fn post_json(
        &self,
        http: &reqwest::Client,
        path: &str,
        body: &serde_json::Value,
    ) -> reqwest::RequestBuilder {
        http.post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(body)
    }

    /// Serves the run `config` describes into `out`.
    pub fn serve(config: &Path, out: &Path) -> Env {
        let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args([
                "env",
                "--config",
                config.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut value = |name: &str| {
            let line = lines.next().unwrap().unwrap();
            line.strip_prefix(&format!("{name}="))
                .unwrap_or_else(|| panic!("expected {name}=..., got {line}"))
                .to_string()
        };
        let url = value("FAULTLINE_ENV_URL");
        let token = value("FAULTLINE_ENV_TOKEN");
        Env {
            child,
            url,
            token,
            _stdout: lines,
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
