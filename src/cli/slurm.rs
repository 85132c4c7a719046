//! `dptune sim slurm`: a study (or many) as a Slurm job array. Task I of N runs `dptune sim
//! run FILE… --shard I/N` on a folder every node sees; a merge job that depends on the array
//! (`afterany`) checks that every unit is present (`dptune sim merge`) and writes the tables
//! and plots, or fails naming the missing units. The same command again submits only the
//! tasks that still have units to run. docs/cluster.md.

use super::shards::{presence, shard_of, Presence};
use super::{whole, ProfileArg};
use crate::error::{Error, Result};
use crate::sim::fields::fnv1a;
use crate::sim::output::{read_text_limited, MAX_RECORD_BYTES};
use crate::sim::{Experiment, Profile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// At most this many array tasks (Slurm's own limit, `MaxArraySize`, is often 1001).
pub(super) const MAX_TASKS: u64 = 100_000;

/// What `dptune sim slurm` was asked (its command-line arguments).
#[derive(clap::Args, Debug)]
pub(super) struct Request {
    /// Experiment files (sims/*.toml).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Array tasks N: task I runs the units i with i mod N = I - 1 of every file.
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, MAX_TASKS>)]
    pub tasks: u64,
    #[arg(long, value_enum, default_value = "paper")]
    pub profile: ProfileArg,
    /// Results folder, on a file system every node sees; the scripts and logs go to
    /// OUT/slurm/.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Slurm partition (sbatch --partition).
    #[arg(long, value_parser = partition)]
    pub partition: Option<String>,
    /// Time limit of each task (sbatch --time), e.g. 2:00:00 or 1-0.
    #[arg(long, allow_hyphen_values = true, value_parser = slurm_time)]
    pub time: Option<String>,
    /// CPUs per task; each task runs with as many worker threads.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true,
          value_parser = whole::<1, 1024>)]
    pub cpus_per_task: u64,
    /// GPUs per array task (sbatch --gres=gpu:G), for experiments with device = "cuda".
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<1, 64>)]
    pub gpus: Option<u64>,
    /// One more sbatch option for both scripts, e.g. --sbatch=--account=proj (repeatable).
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true,
          value_parser = sbatch_option)]
    pub sbatch: Vec<String>,
    /// Submit them (sbatch): the array's tasks with missing units, then the merge job.
    #[arg(long)]
    pub submit: bool,
    /// Testing aid: every task exits abruptly after this many units, as if killed.
    #[arg(long, hide = true, allow_negative_numbers = true,
          value_parser = whole::<1, { u64::MAX }>)]
    pub stop_after_units: Option<u64>,
}

impl Request {
    fn profile(&self) -> Profile {
        self.profile.into()
    }
}

/// `--time`: Slurm's forms (minutes, minutes:seconds, hours:minutes:seconds, days-hours,
/// days-hours:minutes, days-hours:minutes:seconds) or UNLIMITED.
pub(super) fn slurm_time(s: &str) -> std::result::Result<String, String> {
    let bad = || {
        "must be a Slurm time limit: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, \
         DAYS-HOURS, DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS or UNLIMITED (e.g. 2:00:00)"
            .to_string()
    };
    if matches!(s, "UNLIMITED" | "INFINITE" | "unlimited" | "infinite") {
        return Ok(s.to_string());
    }
    let number = |p: &str| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, s),
    };
    let fields: Vec<&str> = rest.split(':').collect();
    let ok = days.is_none_or(number) && fields.len() <= 3 && fields.iter().all(|f| number(f));
    if ok {
        Ok(s.to_string())
    } else {
        Err(bad())
    }
}

/// `--partition`: a Slurm partition name, or several separated by commas.
pub(super) fn partition(s: &str) -> std::result::Result<String, String> {
    if !s.is_empty()
        && s.len() <= 200
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ','))
    {
        Ok(s.to_string())
    } else {
        Err(
            "must be a partition name (letters, digits, _ - . ; several separated by commas)"
                .into(),
        )
    }
}

/// `--sbatch`: one more sbatch option for both scripts (`--account=proj`, `--mem=8G`).
pub(super) fn sbatch_option(s: &str) -> std::result::Result<String, String> {
    if s.starts_with('-') && s.len() > 1 && s.len() <= 1000 && !s.chars().any(char::is_control) {
        Ok(s.to_string())
    } else {
        Err(
            "must be one sbatch option on one line, starting with - (e.g. --sbatch=--account=proj)"
                .into(),
        )
    }
}

/// `s` as one shell word.
fn sh(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./=:,@+-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn utf8<'a>(flag: &'static str, p: &'a Path) -> Result<&'a str> {
    p.to_str().ok_or_else(|| {
        Error::invalid(
            flag,
            p.display(),
            "a path in UTF-8 (it is written into a shell script)",
        )
    })
}

/// The folder under `<out>/slurm/` for this set of studies at this profile.
fn key(experiments: &[Experiment], profile: Profile) -> String {
    match experiments {
        [one] => format!("{}-{}", one.name, profile.name()),
        many => {
            let mut names: Vec<&str> = many.iter().map(|e| e.name.as_str()).collect();
            names.sort();
            format!(
                "{}-{}-studies-{:08x}",
                profile.name(),
                many.len(),
                fnv1a(names.join("\n").as_bytes()) as u32
            )
        }
    }
}

/// The marker line of a script dptune wrote: the checksum of everything after it.
const MARK: &str = "# dptune-checksum: ";

fn script_text(body: &str) -> String {
    format!("#!/bin/bash\n{MARK}{:016x}\n{body}", fnv1a(body.as_bytes()))
}

/// Whether `text` is a script dptune wrote, unedited since.
fn unedited(text: &str) -> bool {
    let mut lines = text.splitn(3, '\n');
    let (_, Some(mark), Some(body)) = (lines.next(), lines.next(), lines.next()) else {
        return false;
    };
    mark.strip_prefix(MARK) == Some(format!("{:016x}", fnv1a(body.as_bytes())).as_str())
}

/// Writes the script at `path` unless it already says exactly this; a file there that dptune
/// did not write, or that was edited since, is never overwritten.
fn write_script(path: &Path, body: &str) -> Result<()> {
    let text = script_text(body);
    match read_text_limited(path, MAX_RECORD_BYTES) {
        Ok(Some(old)) if old == text => return Ok(()),
        Ok(Some(old)) if !unedited(&old) => {
            return Err(Error::results(
                path,
                "exists and is not as dptune wrote it (edited, or another file): dptune does not \
                 overwrite it; move it away (or submit it yourself with sbatch)",
            ))
        }
        Ok(_) => {}
        Err(e) => {
            return Err(Error::results(
                path,
                format!("exists and cannot be read ({e}): dptune does not overwrite it"),
            ))
        }
    }
    crate::sim::output::write_text(path, &text)
}

/// A copy of the running dptune under `<out>/slurm/bin/`, named by its bytes' checksum: the
/// array's tasks run this very binary even when the build is replaced while they wait in the
/// queue (a rebuilt binary would make other code's parts).
fn frozen_binary(slurm: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::io(Path::new("dptune"), e))?;
    let bytes = std::fs::read(&exe).map_err(|e| Error::io(&exe, e))?;
    let dst = slurm
        .join("bin")
        .join(format!("dptune-{:016x}", fnv1a(&bytes)));
    if std::fs::metadata(&dst).is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(dst);
    }
    crate::sim::output::write_bytes(&dst, &bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io(&dst, e))?;
    }
    Ok(dst)
}

/// `1,3,5-7` for {1, 3, 5, 6, 7}.
fn array_spec(tasks: &BTreeSet<u64>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = tasks.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        parts.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

/// Runs a Slurm client command; its standard output, or an error naming it.
fn slurm_command(program: &str, args: &[String]) -> Result<String> {
    let o = Command::new(program).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::io(
                Path::new(program),
                "not found on PATH: --submit needs Slurm's client commands (run it on the \
                 cluster's login node), or leave out --submit and submit the scripts with sbatch \
                 where Slurm is",
            )
        } else {
            Error::io(Path::new(program), e)
        }
    })?;
    if !o.status.success() {
        return Err(Error::io(
            Path::new(program),
            format!(
                "`{program} {}` failed ({}): {}",
                args.join(" "),
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The job id `sbatch --parsable` printed (`id` or `id;cluster`).
fn job_id(parsable: &str) -> Result<String> {
    let id = parsable.trim().split(';').next().unwrap_or("").trim();
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        Ok(id.to_string())
    } else {
        Err(Error::io(
            Path::new("sbatch"),
            format!("printed `{}`, not a job id", parsable.trim()),
        ))
    }
}

const JOBS: &str = "jobs.tsv";

/// Jobs recorded under `<out>/slurm/*/jobs.tsv` for any of `names` that Slurm still has
/// queued or running: (job id, what it is).
fn live_jobs(slurm: &Path, names: &[&str]) -> Result<Vec<(String, String)>> {
    let mut recorded: Vec<(String, String)> = Vec::new();
    for d in std::fs::read_dir(slurm).into_iter().flatten().flatten() {
        let path = d.path().join(JOBS);
        let text = read_text_limited(&path, MAX_RECORD_BYTES)?.unwrap_or_default();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 4 || !f[3].split(',').any(|n| names.contains(&n)) {
                continue;
            }
            let what = d.file_name().to_string_lossy().to_string();
            recorded.push((f[0].to_string(), format!("array job of {what}")));
            recorded.push((f[1].to_string(), format!("merge job of {what}")));
        }
    }
    if recorded.is_empty() {
        return Ok(Vec::new());
    }
    // Every job Slurm lists (job ids are unique in a cluster): %F is an array's job id, and a
    // plain job's own.
    let queued = slurm_command("squeue", &["--noheader".into(), "--format=%F".into()])?;
    let queued: BTreeSet<&str> = queued.lines().map(str::trim).collect();
    Ok(recorded
        .into_iter()
        .filter(|(id, _)| queued.contains(id.as_str()))
        .collect())
}

/// The command that writes (and submits) these scripts again.
fn command_line(r: &Request) -> String {
    let mut c = vec!["dptune".to_string(), "sim".into(), "slurm".into()];
    c.extend(r.files.iter().map(|f| sh(&f.to_string_lossy())));
    c.push(format!("--profile {}", r.profile().name()));
    c.push(format!("--out {}", sh(&r.out.to_string_lossy())));
    c.push(format!("--tasks {}", r.tasks));
    if let Some(p) = &r.partition {
        c.push(format!("--partition {}", sh(p)));
    }
    if let Some(t) = &r.time {
        c.push(format!("--time {}", sh(t)));
    }
    c.push(format!("--cpus-per-task {}", r.cpus_per_task));
    if let Some(g) = r.gpus {
        c.push(format!("--gpus {g}"));
    }
    for o in &r.sbatch {
        c.push(sh(&format!("--sbatch={o}")));
    }
    c.push("--submit".into());
    c.join(" ")
}

/// Writes the array and merge scripts for `experiments` (already loaded and checked) and, with
/// `--submit`, submits the tasks that have units to run and the merge job after them.
pub(super) fn slurm(r: &Request, experiments: &[Experiment]) -> Result<String> {
    if let Some(e) = experiments.iter().find(|e| e.name == "slurm") {
        return Err(Error::Experiment {
            file: e.file.display().to_string(),
            at: String::new(),
            field: "name".into(),
            reason: "`slurm` would share its results folder with the Slurm scripts \
                     (<out>/slurm/): choose another name"
                .into(),
        });
    }
    let largest = experiments
        .iter()
        .map(|e| e.study.units().len() as u64)
        .max()
        .unwrap_or(0);
    if r.tasks > largest {
        return Err(Error::invalid(
            "--tasks",
            r.tasks,
            format!(
                "at most {largest}: the largest of these studies has {largest} unit(s), so more \
                 tasks would have nothing to run"
            ),
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))?;
    let out_abs = if r.out.is_absolute() {
        r.out.clone()
    } else {
        cwd.join(&r.out)
    };
    let slurm = out_abs.join("slurm");
    let folder = slurm.join(key(experiments, r.profile()));
    let logs = folder.join("logs");
    let logs_text = utf8("--out", &logs)?;
    if logs_text
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || "%'\"\\#".contains(c))
    {
        return Err(Error::invalid(
            "--out",
            r.out.display(),
            format!(
                "a folder whose absolute path has no spaces, quotes, backslashes, # or % (the \
                 Slurm log path {logs_text} is written into an #SBATCH line)"
            ),
        ));
    }
    std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
    let binary = frozen_binary(&slurm)?;
    let data = crate::data::cache::data_dir();
    let data = if data.is_absolute() {
        data
    } else {
        cwd.join(data)
    };
    // The data cache by absolute path (a node's dptune would otherwise look in the source tree
    // it was built from). OpenBLAS needs nothing: dptune pins its kernels and one thread itself,
    // on each node.
    let env = [(
        crate::data::cache::DATA_ENV,
        utf8("DPTUNE_DATA", &data)?.to_string(),
    )];
    let files = r
        .files
        .iter()
        .map(|f| utf8("FILE", f).map(sh))
        .collect::<Result<Vec<_>>>()?
        .join(" ");
    let out = sh(utf8("--out", &r.out)?);
    let (n, c, profile) = (r.tasks, r.cpus_per_task, r.profile().name());
    let key = key(experiments, r.profile());
    let studies = experiments
        .iter()
        .map(|e| e.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let header = |role: &str| {
        format!(
            "# Written by `dptune sim slurm` for {studies} ({profile} profile, results in {}).\n\
             # {role}\n\
             # Task I of the array runs shard I/{n} of every study (units i with i mod {n} = I - 1);\n\
             # the merge job runs after the array (--dependency=afterany:<its id>), checks that every\n\
             # unit is present and writes the tables and plots, or fails naming the missing units.\n\
             # Write and submit again (only tasks with missing units run; finished units are kept):\n\
             #   {}\n\
             # dptune does not overwrite this file once it is edited.\n",
            r.out.display(),
            command_line(r),
        )
    };
    let mut common = format!("#SBATCH --ntasks=1\n#SBATCH --cpus-per-task={c}\n");
    if let Some(p) = &r.partition {
        common += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(t) = &r.time {
        common += &format!("#SBATCH --time={t}\n");
    }
    let mut extra = String::new();
    for o in &r.sbatch {
        extra += &format!("#SBATCH {o}\n");
    }
    let mut prelude = format!(
        "set -euo pipefail\ncd {}\n",
        sh(utf8("the current folder", &cwd)?)
    );
    for (var, v) in &env {
        prelude += &format!("export {var}={}\n", sh(v));
    }
    let bin = sh(utf8("the dptune binary", &binary)?);
    let stop = r
        .stop_after_units
        .map_or(String::new(), |k| format!(" --stop-after-units {k}"));
    let gres = r
        .gpus
        .map_or(String::new(), |g| format!("#SBATCH --gres=gpu:{g}\n"));
    let array = format!(
        "{}#SBATCH --job-name=dptune-{key}\n#SBATCH --array=1-{n}\n{common}{gres}\
         #SBATCH --output={logs_text}/array-%A_%a.out\n{extra}{prelude}\
         echo \"dptune: shard ${{SLURM_ARRAY_TASK_ID}}/{n} (job ${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}) on $(hostname)\"\n\
         exec {bin} sim run {files} --profile {profile} --out {out} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\" --threads {c} --quiet --no-report{stop}\n",
        header("The array job.")
    );
    let merge = format!(
        "{}#SBATCH --job-name=dptune-{key}-merge\n{common}\
         #SBATCH --output={logs_text}/merge-%j.out\n{extra}{prelude}\
         exec {bin} sim merge {files} --profile {profile} --out {out} --tasks {n} --threads {c}\n",
        header("The merge job.")
    );
    let (array_path, merge_path) = (folder.join("array.sbatch"), folder.join("merge.sbatch"));
    write_script(&array_path, &array)?;
    write_script(&merge_path, &merge)?;
    let shown = |p: &Path| {
        p.strip_prefix(&cwd)
            .map_or_else(|_| p.display().to_string(), |q| q.display().to_string())
    };
    let (a, m) = (shown(&array_path), shown(&merge_path));
    let mut lines = vec![
        format!("wrote {a} (an array of {n} tasks: task I runs `dptune sim run … --shard I/{n} --threads {c}`)"),
        format!("wrote {m} (after the array: checks every unit is present, writes tables and plots)"),
        format!("binary: {}", binary.display()),
    ];
    if !r.submit {
        lines.push(format!(
            "submit them with --submit, or yourself:\n  array=$(sbatch --parsable {}) && sbatch --dependency=afterany:${{array%%;*}} {}",
            sh(&a),
            sh(&m)
        ));
        return Ok(lines.join("\n"));
    }
    // Submit: never beside a live array of the same studies; only the tasks with missing units.
    let names: Vec<&str> = experiments.iter().map(|e| e.name.as_str()).collect();
    let live = live_jobs(&slurm, &names)?;
    if !live.is_empty() {
        let ids: Vec<&str> = live.iter().map(|(id, _)| id.as_str()).collect();
        return Err(Error::results(
            &out_abs,
            format!(
                "{} still queued or running on these results ({}): a second array on the same \
                 folder would run the same units twice; wait for it (squeue --jobs={}) or cancel \
                 it (scancel {}), then submit again",
                if live.len() == 1 {
                    "a job is"
                } else {
                    "jobs are"
                },
                live.iter()
                    .map(|(id, what)| format!("{what}: {id}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                ids.join(","),
                ids.join(" ")
            ),
        ));
    }
    let found: Vec<(&Experiment, Presence)> = experiments
        .iter()
        .map(|e| presence(e, &r.out).map(|p| (e, p)))
        .collect::<Result<_>>()?;
    let needed: BTreeSet<u64> = found
        .iter()
        .flat_map(|(_, p)| p.missing.iter().map(|(i, _)| shard_of(*i, n)))
        .collect();
    let missing: usize = found.iter().map(|(_, p)| p.missing.len()).sum();
    if needed.is_empty() {
        lines.push(if found.iter().all(|(_, p)| p.merged) {
            "nothing to submit: every study is complete".to_string()
        } else {
            format!(
                "nothing to submit: every unit is present; `dptune sim merge {files} --profile \
                 {profile} --out {out}` writes the tables (no cluster needed)"
            )
        });
        return Ok(lines.join("\n"));
    }
    let spec = array_spec(&needed);
    let array_id = job_id(&slurm_command(
        "sbatch",
        &[
            "--parsable".into(),
            format!("--array={spec}"),
            array_path.display().to_string(),
        ],
    )?)?;
    let merge_id = match slurm_command(
        "sbatch",
        &[
            "--parsable".into(),
            format!("--dependency=afterany:{array_id}"),
            merge_path.display().to_string(),
        ],
    )
    .and_then(|o| job_id(&o))
    {
        Ok(id) => id,
        Err(e) => {
            let cancelled = slurm_command("scancel", std::slice::from_ref(&array_id)).is_ok();
            return Err(Error::io(
                Path::new("sbatch"),
                format!(
                    "the merge job could not be submitted ({e}); the array job {array_id} was {}",
                    if cancelled {
                        "cancelled"
                    } else {
                        "submitted and could NOT be cancelled: scancel it"
                    }
                ),
            ));
        }
    };
    let line = format!(
        "{array_id}\t{merge_id}\t{spec}\t{}\t{}\n",
        names.join(","),
        crate::sim::provenance::utc(crate::sim::provenance::now())
    );
    crate::sim::output::append(&folder.join(JOBS), line.as_bytes())?;
    let task_word = if needed.len() == 1 { "task" } else { "tasks" };
    lines.push(format!(
        "submitted array job {array_id} ({task_word} {spec} of {n}: {missing} unit(s) to run) and merge job {merge_id} (after the array ends)"
    ));
    lines.push(format!(
        "  logs:   {}/array-{array_id}_I.out, merge-{merge_id}.out",
        shown(&logs)
    ));
    lines.push(format!(
        "  watch:  squeue --jobs={array_id},{merge_id}   (sacct --jobs={array_id},{merge_id} where accounting is on)"
    ));
    lines.push(format!(
        "  check:  dptune sim status {files} --profile {profile} --out {out} --require-complete --tasks {n}"
    ));
    lines.push(format!("  cancel: scancel {array_id} {merge_id}"));
    lines.push(format!(
        "  resume: {}   (the same command: submits only the tasks with missing units)",
        command_line(r)
    ));
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_in_slurm_forms() {
        for ok in [
            "30",
            "30:00",
            "2:00:00",
            "1-0",
            "1-12",
            "1-12:30",
            "1-12:30:00",
            "UNLIMITED",
        ] {
            assert_eq!(slurm_time(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "",
            "1h",
            "1:2:3:4",
            "-5",
            "1-",
            "1-2-3",
            "2:00:0x",
            " 30",
            "1-1:2:3:4",
        ] {
            assert!(slurm_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn array_specs_are_compact() {
        let s = |v: &[u64]| array_spec(&v.iter().copied().collect());
        assert_eq!(s(&[1, 2, 3]), "1-3");
        assert_eq!(s(&[2]), "2");
        assert_eq!(s(&[1, 3, 5, 6, 7, 10]), "1,3,5-7,10");
    }

    #[test]
    fn an_edited_script_is_not_ours_to_overwrite() {
        let text = script_text("#SBATCH --array=1-3\nexec true\n");
        assert!(unedited(&text));
        assert!(!unedited(&text.replace("1-3", "1-4")));
        assert!(!unedited("#!/bin/bash\nexec true\n"));
    }

    #[test]
    fn shell_words_survive_quoting() {
        assert_eq!(sh("sims/a.toml"), "sims/a.toml");
        assert_eq!(sh("my results"), "'my results'");
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh(""), "''");
    }

    #[test]
    fn job_ids_from_parsable_output() {
        assert_eq!(job_id("123\n").unwrap(), "123");
        assert_eq!(job_id("123;cluster\n").unwrap(), "123");
        assert!(job_id("Submitted batch job 5").is_err());
    }
}
