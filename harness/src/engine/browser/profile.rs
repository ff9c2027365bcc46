//! The browser's profile directories: named for the harness's pid, so a later run can
//! remove those of runs that died without removing their own.

use std::path::Path;

/// How every profile directory's name starts: the prefix, then the pid of the process
/// that owns it (`faultline-chromium-<pid>-<random>`), so a later run can tell a dead
/// run's directory from a live one's.
pub const PROFILE_PREFIX: &str = "faultline-chromium-";

/// Removes the profile directories in `temp` whose owning process is dead: a run killed
/// by SIGKILL never ran the destructor that removes its own. A directory whose owner
/// lives, whose name carries no pid (an older faultline's) or that is not ours to remove
/// is left alone.
pub fn remove_stale_profiles(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if owner > 0 && !process_exists(owner) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` exists (a zombie or another user's process included).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_profiles_of_dead_owners_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let names = [
            format!("{PROFILE_PREFIX}{dead}-aB3dEf"),
            format!("{PROFILE_PREFIX}{}-aB3dEf", sleeper.id()),
            format!("{PROFILE_PREFIX}{}-aB3dEf", std::process::id()),
            // An older faultline's, whose owner cannot be told.
            format!("{PROFILE_PREFIX}aB3dEf"),
            format!("other-{dead}-aB3dEf"),
        ];
        for name in &names {
            std::fs::create_dir_all(temp.path().join(name).join("Default")).unwrap();
        }
        remove_stale_profiles(temp.path());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        let left: Vec<bool> = names.iter().map(|n| temp.path().join(n).exists()).collect();
        assert_eq!(left, [false, true, true, true, true], "{names:?}");
    }
}
