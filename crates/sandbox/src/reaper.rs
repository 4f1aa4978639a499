//! The reaper: what makes a command's processes end with it when no PID
//! namespace does (the Landlock backend, the sandbox off;
//! docs/tools.md#sandbox). The process that runs a command (the job
//! keeper) becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every
//! process the command starts stays below it whatever it does to its
//! process group or session (`setpgid`, `setsid`, GNU `timeout`, `set -m`,
//! `start_new_session`) and however many of its parents exit: an orphan is
//! re-parented to the subreaper, not to init. [`descendants`] finds them
//! by walking parent links in `/proc`, and [`kill_descendants`] kills
//! them all, again and again until none is left (a process forking while
//! it is killed leaves its child below the subreaper for the next round).
//!
//! Linux only; elsewhere there is nothing to walk and the functions do
//! nothing.

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Exited, waiting to be reaped.
    pub zombie: bool,
}

/// Every process, read from `/proc` (empty where there is none).
pub fn processes() -> Vec<Proc> {
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        if let Some(p) = parse_stat(pid, &stat) {
            procs.push(p);
        }
    }
    procs
}

/// `pid (comm) state ppid pgrp …`; comm may hold anything, `)` included.
fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process below `root` (children, their children, …), parents
/// before their children.
pub fn descendants(root: i32) -> Vec<Proc> {
    descendants_in(&processes(), root)
}

fn descendants_in(procs: &[Proc], root: i32) -> Vec<Proc> {
    let mut below: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    let mut i = 0;
    while i < parents.len() {
        let parent = parents[i];
        for p in procs.iter().filter(|p| p.ppid == parent && p.pid != root) {
            if !below.iter().any(|b| b.pid == p.pid) {
                below.push(*p);
                parents.push(p.pid);
            }
        }
        i += 1;
    }
    below
}

#[cfg(target_os = "linux")]
mod imp {
    use std::time::Duration;

    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::{Pid, getpid};

    use super::descendants;

    /// Make this process the child subreaper of everything it starts.
    pub fn become_subreaper() -> std::io::Result<()> {
        nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)
    }

    /// Signal number `sig` to every living process below this one; how
    /// many there were.
    pub fn signal_descendants(sig: i32) -> usize {
        let Ok(sig) = Signal::try_from(sig) else {
            return 0;
        };
        let me = getpid().as_raw();
        let alive: Vec<i32> = descendants(me)
            .iter()
            .filter(|p| !p.zombie)
            .map(|p| p.pid)
            .collect();
        for pid in &alive {
            let _ = kill(Pid::from_raw(*pid), sig);
        }
        alive.len()
    }

    /// SIGKILL every process below this one until none is left, reaping
    /// the orphans re-parented here; `keep` (the command, whose status the
    /// caller waits for) is killed but not reaped. How many processes
    /// were killed.
    pub fn kill_descendants(keep: Option<i32>) -> usize {
        let me = getpid().as_raw();
        let mut killed = Vec::new();
        // Each round kills what it finds; what a dying process forked
        // in between is found in the next. Bounded against a fork bomb
        // outpacing the walk (its processes stay below us, and the next
        // stop finds them).
        for _ in 0..200 {
            let below = descendants(me);
            for p in below.iter().filter(|p| p.zombie && p.ppid == me) {
                if Some(p.pid) != keep {
                    let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
                }
            }
            let alive: Vec<i32> = below.iter().filter(|p| !p.zombie).map(|p| p.pid).collect();
            if alive.is_empty() {
                break;
            }
            for pid in alive {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                if !killed.contains(&pid) {
                    killed.push(pid);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        killed.len()
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn become_subreaper() -> std::io::Result<()> {
        Ok(())
    }

    pub fn signal_descendants(_sig: i32) -> usize {
        0
    }

    pub fn kill_descendants(_keep: Option<i32>) -> usize {
        0
    }
}

pub use imp::{become_subreaper, kill_descendants, signal_descendants};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_whatever_the_command_name_holds() {
        let p = parse_stat(42, "42 (a) b) c) S 7 42 42 0 -1").unwrap();
        assert_eq!(
            p,
            Proc {
                pid: 42,
                ppid: 7,
                pgrp: 42,
                zombie: false
            }
        );
        assert!(parse_stat(9, "9 (z) Z 1 9 9").unwrap().zombie);
        assert_eq!(parse_stat(9, "garbage"), None);
    }

    #[test]
    fn descendants_follow_parent_links_to_any_depth() {
        let p = |pid, ppid| Proc {
            pid,
            ppid,
            pgrp: pid,
            zombie: false,
        };
        let procs = [p(1, 0), p(10, 1), p(11, 10), p(12, 11), p(20, 1), p(13, 10)];
        let below: Vec<i32> = descendants_in(&procs, 10).iter().map(|p| p.pid).collect();
        assert_eq!(below, vec![11, 13, 12]);
        assert!(descendants_in(&procs, 12).is_empty());
    }

    #[test]
    fn this_process_sees_its_own_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let below = descendants(std::process::id() as i32);
        assert!(below.iter().any(|p| p.pid == child.id() as i32));
        let _ = child.kill();
        let _ = child.wait();
    }
}
