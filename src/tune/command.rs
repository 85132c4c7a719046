//! One run of the user's command: its hyperparameters, seed, privacy parameters and fresh
//! output directory go into its environment and into `dptune-run.json` in that directory; its
//! score is read from the last line it prints that is a JSON object with a `score`.

use super::file::RunPrivacy;
use super::space::Value;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one run is given.
pub struct Request<'a> {
    pub index: u64,
    pub seed: u64,
    pub dir: PathBuf,
    pub values: &'a [(String, Value)],
    pub run: Option<&'a RunPrivacy>,
    /// (i, k): a run on the i-th of k disjoint shards of the training data (propose-test).
    pub shard: Option<(usize, usize)>,
    /// Some(n): the run reports the losses of n validation users (DP-GIBO), not a score.
    pub users: Option<usize>,
    pub timeout: Option<Duration>,
}

/// How a run ended: its raw score, or why it failed (told the worst score), or stopped
/// because the search was interrupted (recorded as nothing: it runs again on resuming).
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    Score(f64),
    /// Every validation user's loss (DP-GIBO).
    Losses(Vec<f64>),
    Failed(String),
    Interrupted,
}

/// Set by SIGINT (Ctrl-C) or SIGTERM once [`catch_interrupts`] is on: the runs stop, their
/// process groups with them (they are not in the terminal's group, so they would not see a
/// Ctrl-C themselves), and the search ends with its journal as it stands.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

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

/// The file each run finds in its output directory (also named by `DPTUNE_RUN_FILE`).
pub const RUN_FILE: &str = "dptune-run.json";

/// The environment name of hyperparameter `name` (`learning_rate` → `DPTUNE_HP_LEARNING_RATE`).
pub fn env_name(name: &str) -> String {
    format!("DPTUNE_HP_{}", name.to_ascii_uppercase())
}

/// The script an interpreter is asked to run (`python3 train.py`: its first argument that is
/// not an option), refused before any run when no such file exists: every run would fail
/// and the search's budget would be spent on nothing. Only a name ending in a script
/// extension, without spaces, is taken for a script path.
pub fn check_script(command: &[String]) -> Result<()> {
    const SCRIPTS: [&str; 10] = [
        ".py", ".sh", ".bash", ".R", ".r", ".jl", ".rb", ".pl", ".js", ".lua",
    ];
    let Some(first) = command.iter().skip(1).find(|a| !a.starts_with('-')) else {
        return Ok(());
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
    Ok(())
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
/// directory written; everything the command itself does wrong is a failed run.
pub fn run(command: &[String], req: &Request) -> Result<Ended> {
    std::fs::create_dir_all(&req.dir).map_err(|e| Error::io(&req.dir, e))?;
    let mut hyper = serde_json::Map::new();
    for (name, v) in req.values {
        hyper.insert(name.clone(), serde_json::to_value(v).expect("plain values"));
    }
    let mut about = serde_json::json!({
        "run": req.index,
        "seed": req.seed,
        "output_dir": req.dir,
        "hyperparameters": hyper,
    });
    let mut env: Vec<(String, String)> = vec![
        ("DPTUNE_RUN".into(), req.index.to_string()),
        ("DPTUNE_SEED".into(), req.seed.to_string()),
        ("DPTUNE_OUTPUT_DIR".into(), req.dir.display().to_string()),
        (
            "DPTUNE_RUN_FILE".into(),
            req.dir.join(RUN_FILE).display().to_string(),
        ),
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
    if let Some(RunPrivacy::DpSgd(d)) = req.run {
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
    let run_file = req.dir.join(RUN_FILE);
    std::fs::write(
        &run_file,
        serde_json::to_string_pretty(&about).expect("plain values"),
    )
    .map_err(|e| Error::io(&run_file, e))?;
    let stdout_path = req.dir.join("stdout.log");
    let stderr_path = req.dir.join("stderr.log");
    let create = |p: &Path| std::fs::File::create(p).map_err(|e| Error::io(p, e));
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
    }
    let mut child = cmd.spawn().map_err(|e| {
        Error::Infeasible(format!(
            "the command `{}` cannot be started: {e}",
            command[0]
        ))
    })?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Ok(Ended::Failed(format!("waiting for it failed: {e}"))),
        }
        if interrupted() {
            kill_group(&mut child);
            return Ok(Ended::Interrupted);
        }
        if let Some(limit) = req.timeout {
            if start.elapsed() > limit {
                kill_group(&mut child);
                return Ok(Ended::Failed(format!(
                    "stopped after the timeout of {} s",
                    limit.as_secs_f64()
                )));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let printed = std::fs::read(&stdout_path).map_err(|e| Error::io(&stdout_path, e))?;
    let printed = String::from_utf8_lossy(&printed);
    let result = match req.users {
        None => score_of(&printed).map(Ended::Score),
        Some(n) => losses_of(&printed, n).map(Ended::Losses),
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

/// Stops the run and everything it started (its process group, which it leads).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        if pid > 1 {
            // SAFETY: kill(2) with a negative pid signals that process group only; the group
            // is the child's own (process_group(0) above).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last printed line that is a JSON object, read; `example` shows what was expected.
fn last_json(
    stdout: &str,
    example: &str,
) -> std::result::Result<(serde_json::Value, String), String> {
    let last = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("it printed no JSON line (expected a last line like {example})"))?;
    let v = serde_json::from_str(last)
        .map_err(|e| format!("its last JSON line is not JSON ({e}): {}", clip(last)))?;
    Ok((v, clip(last)))
}

/// The score of the last printed line that is a JSON object with a `score`: a finite number.
pub fn score_of(stdout: &str) -> std::result::Result<f64, String> {
    let (v, last) = last_json(stdout, "{\"score\": 0.87}")?;
    match v.get("score") {
        Some(serde_json::Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(format!("its score is not a finite number: {last}")),
        },
        // serde_json reads NaN and Infinity as no number at all.
        Some(other) => Err(format!("its score is not a finite number: {other}")),
        None => Err(format!("its last JSON line has no \"score\": {last}")),
    }
}

/// The `losses` of the last printed line that is a JSON object with them: `n` finite numbers,
/// one per validation user in the users' order.
pub fn losses_of(stdout: &str, n: usize) -> std::result::Result<Vec<f64>, String> {
    let (v, last) = last_json(stdout, "{\"losses\": [0.3, 0.1, …]}")?;
    let Some(list) = v.get("losses").and_then(|l| l.as_array()) else {
        return Err(format!("its last JSON line has no \"losses\" list: {last}"));
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
            _ => Err(format!("a loss is not a finite number: {x}")),
        })
        .collect()
}

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

    #[test]
    fn the_score_is_the_last_json_line_and_garbage_says_why() {
        assert_eq!(
            score_of("epoch 1\n{\"score\": 0.5}\n{\"score\": 0.75, \"loss\": 2}\n"),
            Ok(0.75)
        );
        assert_eq!(score_of("{\"score\": 3}\ndone\n"), Ok(3.0));
        for (out, says) in [
            ("", "no JSON line"),
            ("hello\n", "no JSON line"),
            ("{\"score\": NaN}", "not JSON"),
            ("{\"score\": \"high\"}", "not a finite number"),
            ("{\"loss\": 1}", "no \"score\""),
            ("{\"score\": 1e999}", "not"),
        ] {
            let e = score_of(out).unwrap_err();
            assert!(e.contains(says), "{out}: {e}");
        }
    }

    #[test]
    fn the_losses_are_the_last_json_line_and_garbage_says_why() {
        assert_eq!(
            losses_of("{\"losses\": [9]}\n{\"losses\": [0.5, 2]}\n", 2),
            Ok(vec![0.5, 2.0])
        );
        for (out, says) in [
            ("", "no JSON line"),
            ("{\"score\": 1}", "no \"losses\""),
            ("{\"losses\": [1]}", "1 losses for the 2"),
            ("{\"losses\": [1, \"x\"]}", "not a finite number"),
            ("{\"losses\": [1, NaN]}", "not JSON"),
        ] {
            let e = losses_of(out, 2).unwrap_err();
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
