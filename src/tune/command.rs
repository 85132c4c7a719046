//! One run of the user's command: its hyperparameters, seed, privacy parameters and fresh
//! output directory go into its environment and into its run file; its score is read from the
//! last line it prints that is a JSON object with a `score`. What dptune keeps of a run besides
//! the command's own outputs (the run file, the captured stdout and stderr) lives in a private
//! folder apart from the output directory: a run's stdout holds its raw score, and the released
//! run's output directory is published.
//!
//! A run dies with dptune: it leads its own process group, gets SIGKILL when the thread that
//! started it ends (Linux's parent-death signal, so a killed dptune takes its runs with it), and
//! its group is stopped once its leader exits, so nothing it forked outlives it; what escaped
//! its group is found by its environment ([`stop_leftovers`]).

use super::file::DpSgdRun;
use super::space::Value;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one run is given.
pub struct Request<'a> {
    pub seed: u64,
    /// Its output directory (made here, fresh: it must not exist).
    pub dir: PathBuf,
    /// The private folder of its run file and captured output (made here).
    pub private: PathBuf,
    pub values: &'a [(String, Value)],
    /// A DP-SGD run's parameters (its environment's `DPTUNE_NOISE_MULTIPLIER`, …).
    pub dp_sgd: Option<&'a DpSgdRun>,
    /// (i, k): a run on the i-th of k disjoint shards of the training data (propose-test).
    pub shard: Option<(usize, usize)>,
    /// Some(n): the run reports the losses of n validation users (DP-GIBO), not a score.
    pub users: Option<usize>,
    pub timeout: Option<Duration>,
}

/// How a run ended: its raw score (and the text the command printed it as), or why it failed
/// (told the worst score), or stopped because the search was interrupted (recorded as
/// nothing: it runs again on resuming).
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    Score(f64, String),
    /// Every validation user's loss (DP-GIBO).
    Losses(Vec<f64>),
    Failed(String),
    Interrupted,
}

/// Set by SIGINT (Ctrl-C) or SIGTERM once [`catch_interrupts`] is on: the runs stop, their
/// process groups with them (they are not in the terminal's group, so they would not see a
/// Ctrl-C themselves), and the search ends with its journal as it stands.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Set when the search stops on an error: the runs in flight are stopped (as by an
/// interrupt) instead of being waited for.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Stops every run in flight (see [`STOPPING`]).
pub fn stop_runs() {
    STOPPING.store(true, Ordering::SeqCst);
}

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM for the rest of the process (see [`INTERRUPTED`]).
pub fn catch_interrupts() {
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The run file in a run's private folder (named by `DPTUNE_RUN_FILE`).
pub const RUN_FILE: &str = "run.json";

/// The environment variable naming a run's output directory: how the runs of a search (and
/// whatever they started) are recognised by [`stop_leftovers`].
pub const OUTPUT_DIR_VAR: &str = "DPTUNE_OUTPUT_DIR";

/// The longest line read as a score (1 MiB); a list of losses may take 64 bytes a user.
const LINE_LIMIT: usize = 1 << 20;

/// The environment name of hyperparameter `name` (`learning_rate` → `DPTUNE_HP_LEARNING_RATE`).
pub fn env_name(name: &str) -> String {
    format!("DPTUNE_HP_{}", name.to_ascii_uppercase())
}

/// The script an interpreter is asked to run (`python3 train.py`: its first argument that is
/// not an option), refused before any run when no such file exists: every run would fail
/// and the search's budget would be spent on nothing. Only a name ending in a script
/// extension, without spaces, is taken for a script path. The script, when there is one: its
/// text is part of the search's fingerprint (a changed script is another search).
pub fn check_script(command: &[String]) -> Result<Option<PathBuf>> {
    const SCRIPTS: [&str; 10] = [
        ".py", ".sh", ".bash", ".R", ".r", ".jl", ".rb", ".pl", ".js", ".lua",
    ];
    let Some(first) = command.iter().skip(1).find(|a| !a.starts_with('-')) else {
        return Ok(None);
    };
    let script = SCRIPTS.iter().any(|e| first.ends_with(e)) && !first.contains(char::is_whitespace);
    if script && !Path::new(first).exists() {
        let dir = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(Error::Infeasible(format!(
            "the script `{first}` of the command does not exist (relative to the working \
             directory {dir}): every run would fail, so nothing was run"
        )));
    }
    Ok(script.then(|| PathBuf::from(first)))
}

/// Where `program` is: itself when it names a path, else the first match on PATH. An error
/// (before any run) when there is none.
pub fn resolve(program: &str) -> Result<PathBuf> {
    let missing = |why: &str| {
        Error::Infeasible(format!(
            "the command `{program}` {why}: give the program to run after `--`, \
             e.g. `dptune tune search.toml -- python3 train.py`"
        ))
    };
    if program.is_empty() {
        return Err(missing("is empty"));
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(missing("is not a file"))
        };
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| missing("is not on PATH"))
}

/// Runs `command` for `req`. An error only when the command cannot be started or its
/// directories made; everything the command itself does wrong is a failed run.
pub fn run(command: &[String], req: &Request) -> Result<Ended> {
    // A fresh directory owned by this run alone: an existing one is never reused.
    std::fs::create_dir(&req.dir).map_err(|e| Error::io(&req.dir, e))?;
    std::fs::create_dir_all(&req.private).map_err(|e| Error::io(&req.private, e))?;
    let mut hyper = serde_json::Map::new();
    for (name, v) in req.values {
        hyper.insert(name.clone(), serde_json::to_value(v).expect("plain values"));
    }
    // No run index: a command that wrote it into its outputs would publish it.
    let mut about = serde_json::json!({
        "seed": req.seed,
        "output_dir": req.dir,
        "hyperparameters": hyper,
    });
    let run_file = req.private.join(RUN_FILE);
    let mut env: Vec<(String, String)> = vec![
        ("DPTUNE_SEED".into(), req.seed.to_string()),
        (OUTPUT_DIR_VAR.into(), req.dir.display().to_string()),
        ("DPTUNE_RUN_FILE".into(), run_file.display().to_string()),
    ];
    for (name, v) in req.values {
        let text = match v {
            Value::Number(x) => format!("{x:e}"),
            Value::Integer(i) => i.to_string(),
            Value::Text(t) => t.clone(),
        };
        env.push((env_name(name), text));
    }
    if let Some(n) = req.users {
        about["users"] = serde_json::json!(n);
        env.push(("DPTUNE_USERS".into(), n.to_string()));
    }
    if let Some((i, k)) = req.shard {
        about["shard"] = serde_json::json!({ "index": i, "of": k });
        env.push(("DPTUNE_SHARD".into(), i.to_string()));
        env.push(("DPTUNE_SHARDS".into(), k.to_string()));
    }
    if let Some(d) = req.dp_sgd {
        about["dp_sgd"] = serde_json::to_value(d).expect("plain values");
        env.push((
            "DPTUNE_NOISE_MULTIPLIER".into(),
            format!("{:e}", d.noise_multiplier),
        ));
        env.push((
            "DPTUNE_SAMPLING_RATE".into(),
            format!("{:e}", d.sampling_rate),
        ));
        env.push(("DPTUNE_STEPS".into(), d.steps.to_string()));
        env.push(("DPTUNE_SAMPLING".into(), d.sampling.to_string()));
        for (k, v) in [
            ("DPTUNE_DATA_SIZE", d.data_size),
            ("DPTUNE_LOT_SIZE", d.lot_size),
            ("DPTUNE_EPOCHS", d.epochs),
        ] {
            if let Some(v) = v {
                env.push((k.into(), v.to_string()));
            }
        }
    }
    crate::sim::output::write_bytes(
        &run_file,
        serde_json::to_string_pretty(&about)
            .expect("plain values")
            .as_bytes(),
    )?;
    let stdout_path = req.private.join("stdout.log");
    let stderr_path = req.private.join("stderr.log");
    let create = |p: &Path| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .map_err(|e| Error::io(p, e))
    };
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .envs(env)
        .stdin(Stdio::null())
        .stdout(create(&stdout_path)?)
        .stderr(create(&stderr_path)?);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0); // so a timeout stops what the command started too
        #[cfg(target_os = "linux")]
        // SAFETY: prctl(2) is async-signal-safe; the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                // SIGKILL when the thread that started the run ends (dptune killed).
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().map_err(|e| {
        Error::Infeasible(format!(
            "the command `{}` cannot be started: {e}",
            command[0]
        ))
    })?;
    let start = Instant::now();
    let status = loop {
        match exited(&mut child) {
            Ok(true) => {
                // Whatever the leader forked and left goes with it.
                kill_group(&mut child);
                match child.wait() {
                    Ok(status) => break status,
                    Err(e) => return Ok(Ended::Failed(format!("waiting for it failed: {e}"))),
                }
            }
            Ok(false) => {}
            Err(e) => {
                stop(&mut child);
                return Ok(Ended::Failed(format!("waiting for it failed: {e}")));
            }
        }
        if interrupted() || STOPPING.load(Ordering::SeqCst) {
            stop(&mut child);
            return Ok(Ended::Interrupted);
        }
        if let Some(limit) = req.timeout {
            if start.elapsed() > limit {
                stop(&mut child);
                return Ok(Ended::Failed(format!(
                    "stopped after the timeout of {} s",
                    limit.as_secs_f64()
                )));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let limit = req.users.map_or(LINE_LIMIT, |n| LINE_LIMIT.max(64 * n));
    let result = match last_json_line(&stdout_path, limit)? {
        Err(why) => Err(why),
        Ok(line) => match req.users {
            None => score_of(&line).map(|(x, text)| Ended::Score(x, text)),
            Some(n) => losses_of(&line, n).map(Ended::Losses),
        },
    };
    Ok(match (status.success(), result) {
        (true, Ok(e)) => e,
        (true, Err(why)) => Ended::Failed(why),
        (false, _) => Ended::Failed(format!(
            "it exited with {status} (its stderr: {})",
            stderr_path.display()
        )),
    })
}

/// Whether the child has exited, without reaping it: its process id, and so its group's,
/// stays taken until [`kill_group`] has stopped what it left.
fn exited(child: &mut std::process::Child) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        let pid: libc::id_t = child.id();
        // SAFETY: a zeroed siginfo_t is valid; waitid(2) with WNOWAIT leaves the child
        // waitable.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            if libc::waitid(libc::P_PID, pid, &mut info, flags) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(info.si_pid() != 0)
        }
    }
    #[cfg(not(target_os = "linux"))]
    child.try_wait().map(|s| s.is_some())
}

/// Stops the run and everything it started (its process group, which it leads).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        if pid > 1 {
            // SAFETY: kill(2) with a negative pid signals that process group only; the group
            // is the child's own (process_group(0) above), and its id is still the child's
            // (not reaped yet, or just reaped).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
}

/// Stops the run and what it started, and reaps it.
fn stop(child: &mut std::process::Child) {
    kill_group(child);
    let _ = child.wait();
}

/// Stops (SIGKILL) every process of this user whose environment names an output directory
/// under `runs` (what runs of this search left: forked children that escaped their group, or
/// in-flight runs of a dptune that was killed), and waits up to 10 s for them to go. The
/// number stopped. Linux only (elsewhere: 0).
pub fn stop_leftovers(runs: &Path) -> usize {
    #[cfg(target_os = "linux")]
    {
        let mut prefix = format!("{OUTPUT_DIR_VAR}={}", runs.display()).into_bytes();
        prefix.push(b'/');
        let me = std::process::id();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return 0;
        };
        let mut stopped = Vec::new();
        for entry in procs.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            if pid as u32 == me || pid <= 1 {
                continue;
            }
            // Unreadable (another user's, or gone): not ours.
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|v| v.starts_with(&prefix)) {
                // SAFETY: kill(2) on one process id.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                stopped.push(pid);
            }
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            let alive = stopped.iter().any(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    // A zombie (state Z) is gone for this purpose: it runs nothing.
                    .is_ok_and(|s| {
                        s.rsplit(')')
                            .next()
                            .is_some_and(|r| !r.trim_start().starts_with('Z'))
                    })
            });
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        stopped.len()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = runs;
        0
    }
}

/// The last line of the file at `path` whose first non-blank character is `{`, read in one
/// pass with memory bounded by `limit` (a longer such line is a failure, as is none).
fn last_json_line(path: &Path, limit: usize) -> Result<std::result::Result<String, String>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; 1 << 16];
    // The line being read: Some(bytes) while it may be a JSON line and is within the limit.
    let mut line: Option<Vec<u8>> = Some(Vec::new());
    let mut blank = true; // only blanks so far on this line
    let mut too_long = false; // the current line started with `{` and outgrew the limit
    let mut last: std::result::Result<Option<Vec<u8>>, ()> = Ok(None);
    let mut end_line = |line: &mut Option<Vec<u8>>, blank: &mut bool, too_long: &mut bool| {
        if *too_long {
            last = Err(());
        } else if let Some(l) = line.take() {
            if l.first() == Some(&b'{') {
                last = Ok(Some(l));
            }
        }
        *line = Some(Vec::new());
        *blank = true;
        *too_long = false;
    };
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            if b == b'\n' {
                end_line(&mut line, &mut blank, &mut too_long);
                continue;
            }
            if blank && b.is_ascii_whitespace() {
                continue;
            }
            if blank {
                blank = false;
                if b != b'{' {
                    line = None; // not a JSON line: nothing of it is kept
                }
            }
            if let Some(l) = line.as_mut() {
                if l.len() >= limit {
                    line = None;
                    too_long = true;
                } else {
                    l.push(b);
                }
            }
        }
    }
    end_line(&mut line, &mut blank, &mut too_long);
    Ok(match last {
        Ok(Some(l)) => Ok(String::from_utf8_lossy(&l).trim_end().to_string()),
        Ok(None) => {
            Err("it printed no JSON line (expected a last line like {\"score\": 0.87})".into())
        }
        Err(()) => Err(format!("its last JSON line is longer than {} bytes", limit)),
    })
}

/// A JSON line, read; `example` shows what was expected.
fn parse_json(last: &str) -> std::result::Result<serde_json::Value, String> {
    serde_json::from_str(last)
        .map_err(|e| format!("its last JSON line is not JSON ({e}): {}", clip(last)))
}

/// The score of a JSON line with a `score`: a finite number, and the text it was printed as
/// (to recognise it elsewhere).
pub fn score_of(line: &str) -> std::result::Result<(f64, String), String> {
    let v = parse_json(line)?;
    match v.get("score") {
        Some(serde_json::Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok((
                x,
                number_text(line, "score").unwrap_or_else(|| x.to_string()),
            )),
            _ => Err(format!("its score is not a finite number: {}", clip(line))),
        },
        // serde_json reads NaN and Infinity as no number at all.
        Some(other) => Err(format!(
            "its score is not a finite number: {}",
            clip(&other.to_string())
        )),
        None => Err(format!(
            "its last JSON line has no \"score\": {}",
            clip(line)
        )),
    }
}

/// The text of the number after `"key":` in a JSON line, as printed.
fn number_text(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = line[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_string())
}

/// The `losses` of a JSON line with them: `n` finite numbers, one per validation user in the
/// users' order.
pub fn losses_of(line: &str, n: usize) -> std::result::Result<Vec<f64>, String> {
    let v = parse_json(line)?;
    let Some(list) = v.get("losses").and_then(|l| l.as_array()) else {
        return Err(format!(
            "its last JSON line has no \"losses\" list: {}",
            clip(line)
        ));
    };
    if list.len() != n {
        return Err(format!(
            "it reported {} losses for the {n} validation users",
            list.len()
        ));
    }
    list.iter()
        .map(|x| match x.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err("a loss is not a finite number".into()),
        })
        .collect()
}

/// At most 120 characters of `s` (the failure reasons are private, kept in the journal).
fn clip(s: &str) -> String {
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a run that printed `out` gives as its last JSON line, then as a score.
    fn printed(out: &[u8], limit: usize) -> std::result::Result<String, String> {
        let dir = std::env::temp_dir().join(format!("dptune-printed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{:x}.log", {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            out.hash(&mut h);
            h.finish()
        }));
        std::fs::write(&p, out).unwrap();
        let r = last_json_line(&p, limit).unwrap();
        let _ = std::fs::remove_file(&p);
        r
    }

    fn score(out: &str) -> std::result::Result<f64, String> {
        printed(out.as_bytes(), LINE_LIMIT).and_then(|l| score_of(&l).map(|s| s.0))
    }

    #[test]
    fn the_score_is_the_last_json_line_and_garbage_says_why() {
        assert_eq!(
            score("epoch 1\n{\"score\": 0.5}\n{\"score\": 0.75, \"loss\": 2}\n"),
            Ok(0.75)
        );
        assert_eq!(score("{\"score\": 3}\ndone\n"), Ok(3.0));
        assert_eq!(score("  {\"score\": 0.25}  \r\nbye"), Ok(0.25));
        for (out, says) in [
            ("", "no JSON line"),
            ("hello\n", "no JSON line"),
            ("{\"score\": NaN}", "not JSON"),
            ("{\"score\": \"high\"}", "not a finite number"),
            ("{\"loss\": 1}", "no \"score\""),
            ("{\"score\": 1e999}", "not"),
        ] {
            let e = score(out).unwrap_err();
            assert!(e.contains(says), "{out}: {e}");
        }
        // The text the score was printed as, to find it in files.
        assert_eq!(
            score_of("{\"seed\": 1, \"score\" : 5.0000000011e-1}").unwrap(),
            (0.50000000011, "5.0000000011e-1".to_string())
        );
    }

    /// A line longer than the limit is never held whole: a long JSON line is a failure, a long
    /// other line (a progress bar without newlines) is skipped.
    #[test]
    fn a_huge_line_is_read_in_bounded_memory() {
        let mut big = b"{\"score\": 0.5, \"pad\": \"".to_vec();
        big.extend(std::iter::repeat_n(b'x', 5000));
        big.extend(b"\"}\n");
        let e = printed(&big, 1000).unwrap_err();
        assert!(e.contains("longer than 1000 bytes"), "{e}");
        let mut noise = b"{\"score\": 0.5}\n".to_vec();
        noise.extend(std::iter::repeat_n(b'=', 5000));
        assert_eq!(printed(&noise, 1000), Ok("{\"score\": 0.5}".to_string()));
    }

    #[test]
    fn the_losses_are_the_last_json_line_and_garbage_says_why() {
        let losses =
            |out: &str, n| printed(out.as_bytes(), LINE_LIMIT).and_then(|l| losses_of(&l, n));
        assert_eq!(
            losses("{\"losses\": [9]}\n{\"losses\": [0.5, 2]}\n", 2),
            Ok(vec![0.5, 2.0])
        );
        for (out, says) in [
            ("", "no JSON line"),
            ("{\"score\": 1}", "no \"losses\""),
            ("{\"losses\": [1]}", "1 losses for the 2"),
            ("{\"losses\": [1, \"x\"]}", "not a finite number"),
            ("{\"losses\": [1, NaN]}", "not JSON"),
        ] {
            let e = losses(out, 2).unwrap_err();
            assert!(e.contains(says), "{out}: {e}");
        }
    }

    #[test]
    fn a_missing_command_is_named() {
        let e = resolve("surely-no-such-program-dptune")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("surely-no-such-program-dptune") && e.contains("PATH"),
            "{e}"
        );
        assert!(resolve("./no/such/file").is_err());
        assert!(resolve("sh").is_ok());
    }

    #[test]
    fn a_missing_script_is_named_and_anything_else_passes() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = check_script(&argv(&["python3", "-u", "no/such/train.py", "--x"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`no/such/train.py`") && e.contains("nothing was run"),
            "{e}"
        );
        // The script is there; not a script; a module; a shell line; no argument.
        let here = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tune-adult/train.py");
        for ok in [
            &["python3", here][..],
            &["./train", "data.csv"],
            &["python3", "-m", "train"],
            &["sh", "-c", "python3 no/such/train.py"],
            &["./train"],
        ] {
            assert!(check_script(&argv(ok)).is_ok(), "{ok:?}");
        }
    }
}
