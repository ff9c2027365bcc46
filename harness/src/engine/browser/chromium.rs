//! Finding the Chromium to start: a configured path, `$FAULTLINE_CHROMIUM`, or the
//! usual names on the PATH, with a distribution's wrapper script resolved to the binary
//! it starts.

use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};

/// Where to find Chromium: `$FAULTLINE_CHROMIUM`, else the first of the usual names on
/// the PATH. `chromium-headless-shell` (Chromium's automation build: same Blink and V8,
/// no browser UI) comes first because a fresh context and a screenshot cost about a
/// quarter of the CPU they cost in the full browser's headless mode; the full browser
/// is the fallback. Distribution wrapper scripts are resolved to the binary they start
/// (see [`resolve_wrapper`]).
pub fn find_chromium(configured: Option<&Path>) -> Result<PathBuf> {
    // A configured path must exist: finding out at launch would be after the run
    // directory was set up.
    let given = |p: &Path, from: &str| {
        if p.is_file() {
            Ok(resolve_wrapper(p))
        } else {
            Err(anyhow!("{from}: no Chromium executable at {}", p.display()))
        }
    };
    if let Some(p) = configured {
        return given(p, "browser.executable");
    }
    if let Some(p) = std::env::var_os("FAULTLINE_CHROMIUM") {
        return given(Path::new(&p), "FAULTLINE_CHROMIUM");
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in CHROMIUM_NAMES {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(resolve_wrapper(&candidate));
            }
        }
    }
    bail!("no Chromium found: install it (`apt-get install chromium-headless-shell` or `apt-get install chromium`), put it on the PATH, or set FAULTLINE_CHROMIUM")
}

/// Executable names tried on the PATH, best first.
const CHROMIUM_NAMES: &[&str] = &[
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "chrome",
];

/// If `path` is a small shell script that starts a binary by absolute path (Debian's
/// `/usr/bin/chromium-headless-shell` runs `/usr/lib/chromium/chromium-headless-shell`
/// *without* `exec`), returns that binary. Starting the binary directly matters: the
/// kernel's parent-death signal only reaches our direct child, so a wrapper shell would
/// die while the browser it started lived on.
pub fn resolve_wrapper(path: &Path) -> PathBuf {
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 64 * 1024);
    let Some(bytes) = small.then(|| std::fs::read(path).ok()).flatten() else {
        return path.to_path_buf();
    };
    if !bytes.starts_with(b"#!") {
        return path.to_path_buf();
    }
    let text = String::from_utf8_lossy(&bytes);
    let stem = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .filter(|t| t.starts_with('/') && !t.starts_with("/bin/") && t.len() > 1)
        .map(Path::new)
        .find(|t| {
            t.file_name().and_then(|n| n.to_str()) == Some(stem)
                && t != &path
                && starts_with_elf_magic(t)
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| path.to_path_buf())
}

fn starts_with_elf_magic(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"\x7fELF"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapper_script_resolves_to_the_binary_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("lib").join("chromium-headless-shell");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, b"\x7fELF fake binary").unwrap();
        let wrapper = dir.path().join("chromium-headless-shell");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh -e\n\n{} \"$@\"\n", bin.display()),
        )
        .unwrap();
        assert_eq!(resolve_wrapper(&wrapper), bin);
        // A binary, or a script naming nothing usable, is taken as it is.
        assert_eq!(resolve_wrapper(&bin), bin);
        let opaque = dir.path().join("chromium");
        std::fs::write(&opaque, "#!/bin/sh\nexec $LIBDIR/chromium \"$@\"\n").unwrap();
        assert_eq!(resolve_wrapper(&opaque), opaque);
    }
}
