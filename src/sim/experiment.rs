//! Experiment files (`sims/*.toml`): parsing, profiles and validation. Every error names the
//! file, where in it (`:line:column`), the field and the reason.
//!
//! A file has a `name`, a `title`, a `kind` (a registered study, `sim::studies::STUDIES`), the
//! fields of that kind, and optional `[profile.smoke]` / `[profile.paper]` tables whose keys
//! override the file's own (tables are merged key by key, so `[profile.smoke.workload] dims =
//! [1, 2]` changes only the dimensions). A file is validated at *both* profiles whichever one
//! runs, so a typo in `[profile.smoke]` fails a paper run too. See `sims/README.md`.

use super::declarative::{self, Outputs};
use super::fields::{fail, fnv1a, Fields};
use super::studies::{self, StudyKind};
use super::study::{Profile, Study};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A validated experiment.
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub title: String,
    pub profile: Profile,
    /// A hash of the resolved file (profile applied): results of another configuration are
    /// never mixed with these.
    pub config_hash: u64,
    /// The registered kind (`kind` of the file).
    pub kind: &'static StudyKind,
    pub study: Box<dyn Study>,
    /// The file's declarative `[[plots]]` and `[[tables]]`: every figure and table it has.
    pub outputs: Outputs,
    /// The file's `[[claims]]`, evaluated after its outputs (`sim::claims`).
    pub claims: Vec<super::claims::Claim>,
}

/// Reads and validates `path` at `profile` (and checks that it is valid at the other profile).
pub fn load(path: &Path, profile: Profile) -> Result<Experiment> {
    load_text(path, &read_bounded(path)?, profile)
}

/// As [`load`], for the text of a file already read (`path` names it in errors and resolves
/// the relative paths it holds).
pub fn load_text(path: &Path, text: &str, profile: Profile) -> Result<Experiment> {
    let chosen = parse(path, text, profile).map_err(|e| locate(e, text, profile))?;
    for other in Profile::ALL.into_iter().filter(|&p| p != profile) {
        parse(path, text, other).map_err(|e| locate(e, text, other))?;
    }
    Ok(chosen)
}

/// Runs the study's own check (before anything runs); its error is located in the file.
pub fn check(exp: &Experiment) -> Result<()> {
    let units = exp.study.unit_count();
    if units > super::study::MAX_UNITS {
        return Err(fail(
            &exp.file.display().to_string(),
            "(units)",
            &format!(
                "{units} units planned (the product of its repetitions, series, variants and \
                 lists): at most {}; give fewer `seeds` or shorter lists",
                super::study::MAX_UNITS
            ),
        ));
    }
    exp.study.check().map_err(|(field, e)| {
        let err = fail(&exp.file.display().to_string(), &field, &e.to_string());
        match read_bounded(&exp.file) {
            Ok(text) => locate(err, &text, exp.profile),
            Err(_) => err,
        }
    })
}

/// An experiment file is small: a larger one (or a device) is refused instead of read whole.
const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_bounded(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(path, format!("not a UTF-8 text file ({e})")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::io(
            path,
            format!("larger than {MAX_FILE_BYTES} bytes: not an experiment file"),
        ));
    }
    Ok(text)
}

fn parse(path: &Path, text: &str, profile: Profile) -> Result<Experiment> {
    let file = path.display().to_string();
    let mut root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|s| line_column(text, s.start))
            .map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
        Error::Experiment {
            file: file.clone(),
            at,
            field: "(syntax)".into(),
            reason: e.message().trim().to_string(),
        }
    })?;
    let profiles =
        match root.remove("profile") {
            None => toml::Table::new(),
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(fail(
                &file,
                "profile",
                "the root `profile` holds the [profile.smoke] / [profile.paper] override tables \
                 (a study's own choice of constants is `constants`)",
            )),
        };
    for (name, table) in &profiles {
        if name != "smoke" && name != "paper" {
            return Err(fail(
                &file,
                &format!("profile.{name}"),
                "profiles are `smoke` and `paper`",
            ));
        }
        if !table.is_table() {
            return Err(fail(&file, &format!("profile.{name}"), "must be a table"));
        }
    }
    if let Some(toml::Value::Table(over)) = profiles.get(profile.name()) {
        merge(&mut root, over);
    }
    let config_hash = config_hash(&root);
    let f = Fields::new(&file, "", &root);
    let name = f
        .string("name")?
        .ok_or_else(|| f.missing("name", "a short name (letters, digits, -)"))?;
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(f.bad(
            "name",
            "1 to 100 letters, digits, - and _ (it names the results folder)",
        ));
    }
    let title = f.string("title")?.unwrap_or(name).to_string();
    let kind = match f.string("kind")? {
        Some(k) => studies::find(k)
            .ok_or_else(|| f.bad("kind", &format!("`{k}` is not one of {}", studies::names())))?,
        None => return Err(f.missing("kind", &studies::names())),
    };
    let study = (kind.parse)(&f)?;
    let outputs = declarative::parse(&f)?;
    let claims = super::claims::parse(&f)?;
    Ok(Experiment {
        file: path.to_path_buf(),
        name: name.to_string(),
        title,
        profile,
        config_hash,
        kind,
        study,
        outputs,
        claims,
    })
}

/// Adds `:line:column` to an experiment-file error: where its field is written, looked up in
/// the profile's override table first (`[profile.smoke] seeds = …`), then in the file's own.
fn locate(e: Error, text: &str, profile: Profile) -> Error {
    let Error::Experiment {
        file,
        at,
        field,
        reason,
    } = e
    else {
        return e;
    };
    if !at.is_empty() {
        return Error::Experiment {
            file,
            at,
            field,
            reason,
        };
    }
    let in_profile = format!("profile.{}.{field}", profile.name());
    let (field, found) = match span_of(text, &in_profile) {
        Some(s) => (in_profile, Some(s)),
        None => {
            let s = span_of(text, &field);
            (field, s)
        }
    };
    let at = found
        .map(|start| line_column(text, start))
        .map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
    Error::Experiment {
        file,
        at,
        field,
        reason,
    }
}

/// The byte offset where `path` (`a.b[2].c`) is written in `text`: the key of its last table
/// step, or the element of its last array step; the deepest part found when the rest is not.
fn span_of(text: &str, path: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut table: Option<&DeTable> = Some(doc.get_ref());
    let mut value: Option<&DeValue> = None;
    let mut found = None;
    for segment in path.split('.') {
        let (key, indices) = match segment.split_once('[') {
            Some((k, rest)) => (
                k,
                rest.split('[')
                    .filter_map(|i| i.trim_end_matches(']').parse::<usize>().ok())
                    .collect(),
            ),
            None => (segment, Vec::new()),
        };
        let t = match (table, value) {
            (Some(t), _) => t,
            (None, Some(DeValue::Table(t))) => t,
            _ => return found,
        };
        let (k, v) = t.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
        found = Some(k.span().start);
        let mut v = v;
        for i in indices {
            let DeValue::Array(a) = v.get_ref() else {
                return found;
            };
            let Some(el) = a.get(i) else {
                return found;
            };
            found = Some(el.span().start);
            v = el;
        }
        table = None;
        value = Some(v.get_ref());
    }
    found
}

/// Adds `:line:column` to a file error of `text` that has none: where its field is written.
pub(crate) fn locate_in_text(e: Error, text: &str) -> Error {
    match e {
        Error::Experiment {
            file,
            at,
            field,
            reason,
        } if at.is_empty() => {
            let at = span_of(text, &field)
                .map(|start| line_column(text, start))
                .map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
            Error::Experiment {
                file,
                at,
                field,
                reason,
            }
        }
        e => e,
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Overrides `base` with `over`, merging tables key by key.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The hash that keys an experiment's results: its whole parsed file, but for its declared
/// `[[plots]]`, `[[tables]]` and `[[claims]]`, which say how results are drawn and read, not
/// what is computed (every run and report draws them afresh from the tables, so editing one
/// never reruns anything).
fn config_hash(root: &toml::Table) -> u64 {
    let mut keyed = root.clone();
    keyed.remove("plots");
    keyed.remove("tables");
    keyed.remove("claims");
    fnv1a(toml::to_string(&keyed).unwrap_or_default().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_outputs_do_not_change_the_configuration() {
        let file = |extra: &str| -> toml::Table {
            toml::from_str(&format!(
                "name = \"x\"\n[[plots]]\nname = \"p\"\nx = \"t\"\ny = \"v\"\n{extra}"
            ))
            .unwrap()
        };
        let plain = config_hash(&file(""));
        let labelled = file("y_label = \"value (mean)\"\nx_label = \"iteration\"\n");
        assert_eq!(plain, config_hash(&labelled));
        assert_eq!(plain, config_hash(&file("y_scale = \"log\"\n")));
        let mut without: toml::Table = toml::from_str("name = \"x\"\n").unwrap();
        assert_eq!(plain, config_hash(&without));
        // Anything else is part of the configuration.
        without.insert("seeds".into(), toml::Value::Integer(3));
        assert_ne!(plain, config_hash(&without));
    }

    #[test]
    fn fields_are_located_by_line_and_column() {
        let text = "name = \"x\"\nseeds = 3\n[[tuners]]\ntuner = \"a\"\n[[tuners]]\n  mean = 5\n[profile.smoke]\nseeds = 0\n";
        assert_eq!(
            span_of(text, "seeds").map(|s| line_column(text, s)),
            Some((2, 1))
        );
        assert_eq!(
            span_of(text, "tuners[1].mean").map(|s| line_column(text, s)),
            Some((6, 3))
        );
        assert_eq!(
            span_of(text, "profile.smoke.seeds").map(|s| line_column(text, s)),
            Some((8, 1))
        );
        assert_eq!(span_of(text, "nothing"), None);
        let e = locate(fail("f.toml", "seeds", "bad"), text, Profile::Smoke);
        assert_eq!(e.to_string(), "f.toml:8:1: profile.smoke.seeds: bad");
        let e = locate(fail("f.toml", "seeds", "bad"), text, Profile::Paper);
        assert_eq!(e.to_string(), "f.toml:2:1: seeds: bad");
    }
}
