//! `dptune._dptune`: the extension module under the pure-Python package `dptune`.
//!
//! Plain functions on plain data (numbers, strings, nested tuples), each a PyO3 closure: no
//! `#[pyclass]`, because PyO3's `macros` feature would change the features of `syn`, which
//! serde's derive shares, and so every dependency would build again instead of reusing the
//! root's artifacts (python/Cargo.toml). The classes users see (events, accountants, tuners)
//! are pure Python (`dptune/`); stateful objects (a PLD accountant, a tuning session) live
//! here behind capsules.
//!
//! An event is a tuple, as `dptune.accounting` encodes it:
//! `("gaussian", sigma)`, `("laplace", scale)`, `("rr", noise, buckets)`, `("zcdp", rho, xi)`,
//! `("eps_delta", epsilon, delta)`, `("poisson_gaussian", q, sigma)`,
//! `("wor_gaussian", n, m, sigma)`, `("self", event, count)`, `("composed", [event, ...])`,
//! `("repeat_select", event, mean, shape)` (shape = inf: Poisson), `("noop",)`.
//!
//! Every error of the library becomes a Python `ValueError` with the library's message (which
//! names the parameter and its allowed range).

use dptune::accounting::event::CountLaw;
use dptune::accounting::pld::{
    calibrate_dpsgd_noise_pld, composed_epsilon, PldAccountant, PldMechanism, DEFAULT_INTERVAL,
};
use dptune::accounting::pld_events::Pld;
use dptune::accounting::{
    calibrate_dpsgd_noise, rdp_events, Accountant, PrivacyAccountant, Conversion, DpBound, DpSgd, Event, LotSampling,
    Orders, RdpCurve,
};
use dptune::gp::KernelFamily;
use dptune::pareto::designs::Design;
use dptune::pareto::dpareto::{Acquisition, DparetoOptions, FrontSearch, Observation, Oracle};
use dptune::pareto::space::Dimension;
use dptune::pareto::{pareto_front, Objectives};
use dptune::selection::CountFamily;
use dptune::session::{Evaluation, History, Next, Session, Told, Trial};
use dptune::tuners::liu_talwar::LiuTalwar;
use dptune::tuners::naive::Naive;
use dptune::tuners::papernot_steinke::PapernotSteinke;
use dptune::tuners::runs::State;
use dptune::tuners::{SearchAccountant, Tuner};
use dptune::workloads::{
    Declarations, GainPrior, PartitionedDeclaration, PerUserDeclaration, Space, TrainingDeclaration,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyCapsule, PyCapsuleMethods, PyDict, PyList, PyTuple};
use std::ffi::CStr;
use std::sync::Mutex;

type Args<'a, 'py> = &'a Bound<'py, PyTuple>;

/// One evaluation of a front search: (values, ε, mean error, errors, proposed, acquisition).
type FrontRow = (Vec<f64>, f64, f64, Vec<f64>, bool, Option<f64>);

/// What `session_finish` returns: (chosen, released score, runs, fallback).
type Finished = (Option<Vec<f64>>, Option<f64>, u64, bool);

fn err(e: dptune::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

fn arg<'py, T: for<'a> FromPyObjectOwned<'py>>(args: Args<'_, 'py>, i: usize) -> PyResult<T> {
    args.get_item(i)?.extract::<T>().map_err(Into::into)
}

// ---------------------------------------------------------------------------------------------
// Curves the library has no closed form of, defined here through its public `RdpFunction`.

// ---------------------------------------------------------------------------------------------
// Events.

fn tag(ev: &Bound<'_, PyAny>) -> PyResult<String> {
    ev.get_item(0)?.extract::<String>()
}

fn field<'py, T: for<'a> FromPyObjectOwned<'py>>(ev: &Bound<'py, PyAny>, i: usize) -> PyResult<T> {
    ev.get_item(i)?.extract::<T>().map_err(Into::into)
}

fn orders_of(spec: &Bound<'_, PyAny>) -> PyResult<Orders> {
    if spec.is_none() {
        return Ok(Orders::DpAccounting);
    }
    if let Ok(s) = spec.extract::<String>() {
        return Orders::parse(&s).map_err(err);
    }
    let list: Vec<f64> = spec.extract()?;
    if list.is_empty()
        || list
            .iter()
            .any(|o| o.is_nan() || *o <= 1.0 || !o.is_finite())
    {
        return Err(value_error(
            "invalid orders: must be None (dp_accounting's default orders), \"continuous\", or a \
             non-empty list of finite orders > 1",
        ));
    }
    let mut list = list;
    list.sort_by(f64::total_cmp);
    list.dedup();
    Ok(Orders::List(list))
}

/// A Python event as the library's [`Event`] (None: a no-op, which releases nothing): the one
/// translation of the Python vocabulary (dp_accounting's, `dptune.accounting`), checked by
/// [`Event`]'s own constructors.
fn event_of(ev: &Bound<'_, PyAny>) -> PyResult<Option<Event>> {
    let t = tag(ev)?;
    let event = match t.as_str() {
        "noop" => return Ok(None),
        "gaussian" => Event::gaussian(1.0, field(ev, 1)?),
        "laplace" => Event::laplace(1.0, field(ev, 1)?),
        "rr" => {
            let (noise, buckets): (f64, u64) = (field(ev, 1)?, field(ev, 2)?);
            if buckets == 1 {
                return Ok(None); // one bucket: every answer is the same
            }
            Event::randomized_response(noise, buckets)
        }
        "zcdp" => Event::zcdp_xi(field(ev, 1)?, field(ev, 2)?),
        "eps_delta" => {
            let (epsilon, delta): (f64, f64) = (field(ev, 1)?, field(ev, 2)?);
            if delta == 0.0 {
                Event::pure_dp(epsilon)
            } else {
                Event::approximate_dp(epsilon, delta)
            }
        }
        "poisson_gaussian" => {
            let (rate, sigma): (f64, f64) = (field(ev, 1)?, field(ev, 2)?);
            Event::gaussian(1.0, sigma).and_then(|g| Event::poisson_sampled(rate, g))
        }
        "wor_gaussian" => {
            let (n, m): (u64, u64) = (field(ev, 1)?, field(ev, 2)?);
            Event::gaussian(1.0, field(ev, 3)?)
                .and_then(|g| Event::sampled_without_replacement(m as f64 / n as f64, g))
        }
        "self" => {
            let count: u64 = field(ev, 2)?;
            match event_of(&ev.get_item(1)?)? {
                Some(e) if count > 0 => Event::self_composed(count, e),
                _ => return Ok(None),
            }
        }
        "composed" => {
            let mut parts = Vec::new();
            for e in ev.get_item(1)?.try_iter()? {
                parts.extend(event_of(&e?)?);
            }
            if parts.is_empty() {
                return Ok(None);
            }
            Event::composed(parts)
        }
        "repeat_select" => {
            let Some(run) = event_of(&ev.get_item(1)?)? else {
                return Ok(None);
            };
            let (mean, shape): (f64, f64) = (field(ev, 2)?, field(ev, 3)?);
            let law = if shape.is_infinite() && shape > 0.0 {
                CountLaw::Poisson {
                    mean,
                    truncate: None,
                }
            } else {
                CountLaw::TruncatedNegativeBinomial {
                    eta: shape,
                    mean,
                    truncate: None,
                }
            };
            Event::repeat_and_select(law, run)
        }
        other => return Err(value_error(format!("unknown event kind {other:?}"))),
    };
    event.map(Some).map_err(err)
}

/// A list of (event, count) as one event (None: nothing but no-ops).
fn events_of(events: &Bound<'_, PyAny>) -> PyResult<Option<Event>> {
    let mut parts = Vec::new();
    for item in events.try_iter()? {
        let item = item?;
        let count: u64 = item.get_item(1)?.extract()?;
        match event_of(&item.get_item(0)?)? {
            Some(e) if count == 1 => parts.push(e),
            Some(e) if count > 1 => parts.push(Event::self_composed(count, e).map_err(err)?),
            _ => {}
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Event::composed(parts).map(Some).map_err(err)
}

/// The RDP curve of a list of (event, count), repeat-and-select evaluated under `orders`.
fn rdp_total(events: &Bound<'_, PyAny>, orders: &Orders) -> PyResult<Option<RdpCurve>> {
    let Some(event) = events_of(events)? else {
        return Ok(None);
    };
    let rdp = rdp_events::Rdp::new(rdp_accountant(orders.clone()));
    if let Err(why) = rdp.supports(&event) {
        return Err(value_error(format!(
            "the RDP accountant cannot compose this event ({why}): use PLDAccountant"
        )));
    }
    rdp.curve_of(&event).map(Some).map_err(err)
}

fn bound_tuple(py: Python<'_>, b: &DpBound) -> PyResult<Py<PyAny>> {
    Ok((b.epsilon, b.delta, b.order)
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

fn sampling_of(s: &str) -> PyResult<LotSampling> {
    match s {
        "poisson" => Ok(LotSampling::Poisson),
        "without_replacement" | "without-replacement" => Ok(LotSampling::WithoutReplacement),
        other => Err(value_error(format!(
            "invalid sampling = {other:?}: must be \"poisson\" or \"without_replacement\""
        ))),
    }
}

fn rdp_accountant(orders: Orders) -> Accountant {
    Accountant::new(orders, Conversion::Cks)
}

// ---------------------------------------------------------------------------------------------
// Capsules.

const PLD_CAPSULE: &CStr = c"dptune.PldAccountant";
const SESSION_CAPSULE: &CStr = c"dptune.Session";
const FRONT_CAPSULE: &CStr = c"dptune.FrontSearch";

fn capsule<'a, T>(obj: &'a Bound<'_, PyAny>, name: &CStr) -> PyResult<&'a T> {
    let cap = obj
        .cast::<PyCapsule>()
        .map_err(|_| value_error("not a dptune handle"))?;
    let ptr = cap.pointer_checked(Some(name))?;
    // SAFETY: a capsule of this name was made by this module from a boxed `T`
    // (`PyCapsule::new_with_value`), and `obj` keeps it alive while the reference is used.
    Ok(unsafe { ptr.cast::<T>().as_ref() })
}

fn lock<T>(m: &Mutex<T>) -> PyResult<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| value_error("a previous call on this object failed midway; make a new one"))
}

/// A session and the random stream that drives it: `rng::stream(seed, &[])`, now at some
/// word position, and every ask and tell so far. The seed, the position and the history are
/// saved with the state, so a session resumes in another process with exactly the draws an
/// uninterrupted one makes, and a saved state is believed only if its history gives it.
struct TuningSession {
    state: State,
    rng: rand_chacha::ChaCha20Rng,
    seed: u64,
    history: History,
}

/// A front search (random sampling, a grid, or DPareto) and the stream that drives it, saved
/// as a session is (state, seed, word position).
struct FrontSession {
    search: FrontSearch,
    rng: rand_chacha::ChaCha20Rng,
    seed: u64,
}

/// No ε in closed form: DPareto models log ε by its GP, as the paper does.
struct PythonOracle;

impl Oracle for PythonOracle {
    fn evaluate(&mut self, _: &[f64], _: &mut dyn rand::RngCore) -> dptune::Result<Observation> {
        Err(dptune::Error::Infeasible(
            "a front search from Python is told its evaluations".into(),
        ))
    }
}

fn front_handle(py: Python<'_>, s: FrontSession) -> PyResult<Py<PyAny>> {
    Ok(PyCapsule::new_with_value(py, Mutex::new(s), FRONT_CAPSULE)?
        .into_any()
        .unbind())
}

/// A session's saved form: its state as JSON, its seed and its stream's position in words.
fn saved(
    state: &impl serde::Serialize,
    seed: u64,
    rng: &rand_chacha::ChaCha20Rng,
) -> PyResult<(String, u64, u64)> {
    let json = serde_json::to_string(state).map_err(|e| value_error(e.to_string()))?;
    let position = dptune::rng::word_position(rng).map_err(err)?;
    Ok((json, seed, position))
}

/// The stream of a session of `seed`, at word `position`.
fn session_stream(seed: u64, position: u64) -> rand_chacha::ChaCha20Rng {
    let mut rng = dptune::rng::stream(seed, &[]);
    rng.set_word_pos(u128::from(position));
    rng
}

/// A trial as `session_ask` gives it: ('run', index, hyper, what, kind, payload).
fn run_tuple(py: Python<'_>, trial: &Trial) -> PyResult<Py<PyAny>> {
    let hyper = PyList::new(py, &trial.hyper)?;
    let (kind, payload) = match &trial.evaluation {
        Evaluation::Train => ("train", py.None()),
        Evaluation::ShardUtilities { candidates, shards } => (
            "shards",
            (candidates.clone(), *shards)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        ),
        Evaluation::UserLosses { points } => (
            "losses",
            points.clone().into_pyobject(py)?.into_any().unbind(),
        ),
        Evaluation::ValidationGain => ("gain", py.None()),
        other => {
            return Err(value_error(format!(
                "this session asks for {}, which the Python layer cannot give",
                other.what()
            )))
        }
    };
    Ok((
        "run",
        trial.index,
        hyper,
        trial.evaluation.what(),
        kind,
        payload,
    )
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

// ---------------------------------------------------------------------------------------------
// Tuners.

/// The session of `(tuner, space, run, seed, declarations)` (arguments 0 to 4) before its
/// first ask, with its stream there (the tuner draws from it when the session starts, e.g.
/// repeat-and-select's K): what a new session is, and what a saved one's history is replayed
/// from.
fn session_start(a: Args<'_, '_>) -> PyResult<(State, rand_chacha::ChaCha20Rng, u64)> {
    let tuner = tuner_of(&a.get_item(0)?)?;
    let declared = declarations(
        space_of(&a.get_item(1)?)?,
        &a.get_item(2)?,
        opt_arg(a, 4).as_ref(),
    )?;
    let seed: u64 = arg(a, 3)?;
    let mut rng = session_stream(seed, 0);
    let state = tuner.session(&declared, &mut rng).map_err(err)?;
    Ok((state, rng, seed))
}

fn tuner_of(spec: &Bound<'_, PyAny>) -> PyResult<Box<dyn Tuner>> {
    let t = tag(spec)?;
    Ok(match t.as_str() {
        "naive" => {
            let candidates: Option<u64> = field(spec, 1)?;
            let accountant: String = field(spec, 2)?;
            let mut n = match candidates {
                Some(k) => Naive::random(k).map_err(err)?,
                None => Naive::every_candidate(),
            };
            n.accountant = match accountant.as_str() {
                "best" => SearchAccountant::Best,
                "rdp" => SearchAccountant::Rdp,
                "pld" => SearchAccountant::Pld,
                other => {
                    return Err(value_error(format!(
                        "invalid accountant = {other:?}: must be \"best\", \"rdp\" or \"pld\""
                    )))
                }
            };
            Box::new(n)
        }
        "liu-talwar" => Box::new(LiuTalwar::best_of(field(spec, 1)?).map_err(err)?),
        "liu-talwar-threshold" => {
            Box::new(LiuTalwar::threshold(field(spec, 1)?, field(spec, 2)?).map_err(err)?)
        }
        "papernot-steinke" => {
            let dist: String = field(spec, 1)?;
            let family = CountFamily::parse(&dist).map_err(err)?;
            if family == CountFamily::Fixed {
                return Err(value_error(
                    "invalid dist = \"fixed\": must be logarithmic, geometric, tnb:ETA or poisson \
                     (a fixed number of runs is the naive tuner)",
                ));
            }
            Box::new(PapernotSteinke::new(family, field(spec, 2)?, field(spec, 3)?).map_err(err)?)
        }
        // ("registry", name, {param: value}): built by the library's registry from the table
        // of parameters a search file would hold (as `dptune tune` builds them).
        "registry" => {
            let name: String = field(spec, 1)?;
            let tuner =
                dptune::tuners::build(&name, &toml_table(&spec.get_item(2)?)?).map_err(err)?;
            if let Err(why) = tuner.outside_evaluations() {
                return Err(value_error(format!(
                    "tuner {name:?} cannot be driven from Python: {why}"
                )));
            }
            tuner
        }
        other => return Err(value_error(format!("unknown tuner {other:?}"))),
    })
}

/// A dict of parameters as a TOML table (None values left out).
fn toml_table(d: &Bound<'_, PyAny>) -> PyResult<toml::Table> {
    let d = d
        .cast::<PyDict>()
        .map_err(|_| value_error("tuner parameters must be a dict"))?;
    let mut t = toml::Table::new();
    for (k, v) in d.iter() {
        if v.is_none() {
            continue;
        }
        t.insert(k.extract::<String>()?, toml_value(&v)?);
    }
    Ok(t)
}

fn toml_value(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if let Ok(b) = v.extract::<bool>() {
        return Ok(toml::Value::Boolean(b));
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(toml::Value::String(s));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(toml::Value::Integer(v.extract::<i64>()?));
    }
    if let Ok(x) = v.extract::<f64>() {
        return Ok(toml::Value::Float(x));
    }
    if let Ok(list) = v.cast::<PyList>() {
        return list
            .iter()
            .map(|x| toml_value(&x))
            .collect::<PyResult<Vec<_>>>()
            .map(toml::Value::Array);
    }
    Err(value_error(format!(
        "unsupported tuner parameter value {v}"
    )))
}

fn space_of(spec: &Bound<'_, PyAny>) -> PyResult<Space> {
    if let Ok(dim) = spec.extract::<usize>() {
        if dim == 0 {
            return Err(value_error("invalid dim = 0: must be an integer >= 1"));
        }
        return Ok(Space::UnitBox { dim });
    }
    let list: Vec<Vec<f64>> = spec.extract()?;
    if list.is_empty() {
        return Err(value_error(
            "invalid candidates: must be a non-empty list of points",
        ));
    }
    Ok(Space::Finite(list))
}

/// A run's declarations: its event (a run of None: no training declared; each accountant
/// bounds what it supports of it);
/// `more` (None, or a dict) adds what the other tuners rest on: `partitioned` (the number of
/// private validation records, or None), `per_user` ((n_users, evaluation_sd, run event or
/// None)), `gain_prior` ((kernel, lengthscale, scale, noise_sd, rho)).
fn declarations(
    space: Space,
    run: &Bound<'_, PyAny>,
    more: Option<&Bound<'_, PyAny>>,
) -> PyResult<Declarations> {
    let training = if run.is_none() {
        None
    } else {
        Some(TrainingDeclaration {
            run: costly(event_of(run)?)?,
        })
    };
    let mut declared = Declarations {
        name: "your training".into(),
        space,
        training,
        gain_prior: None,
        lipschitz: None,
        partitioned: None,
        per_user: None,
    };
    let Some(more) = more.filter(|m| !m.is_none()) else {
        return Ok(declared);
    };
    let more = more
        .cast::<PyDict>()
        .map_err(|_| value_error("declarations must be a dict"))?;
    if let Some(p) = more.get_item("partitioned")? {
        declared.partitioned = Some(PartitionedDeclaration {
            private_validation_records: p.extract()?,
        });
    }
    if let Some(u) = more.get_item("per_user")? {
        let (n_users, evaluation_sd): (usize, f64) = (field(&u, 0)?, field(&u, 1)?);
        let run = u.get_item(2)?;
        let evaluation = if run.is_none() {
            None
        } else {
            Some(costly(event_of(&run)?)?)
        };
        let dim = match &declared.space {
            Space::UnitBox { dim } => *dim,
            _ => return Err(value_error("per-user losses need a unit-box space")),
        };
        declared.per_user = Some(PerUserDeclaration {
            n_users,
            domain: vec![(0.0, 1.0); dim],
            evaluation_sd,
            prior_lengthscales: None,
            evaluation,
        });
    }
    if let Some(g) = more.get_item("gain_prior")? {
        let kernel: String = field(&g, 0)?;
        declared.gain_prior = Some(GainPrior {
            kernel: KernelFamily::parse(&kernel).map_err(err)?,
            lengthscale: field(&g, 1)?,
            scale: field(&g, 2)?,
            noise_sd: field(&g, 3)?,
            rho: field(&g, 4)?,
        });
    }
    Ok(declared)
}

/// A run's event, which must cost some privacy.
fn costly(run: Option<Event>) -> PyResult<Event> {
    run.ok_or_else(|| {
        value_error("invalid run: a run's event must cost some privacy (not a no-op)")
    })
}

/// The optional argument `i` (None when absent).
fn opt_arg<'py>(args: Args<'_, 'py>, i: usize) -> Option<Bound<'py, PyAny>> {
    args.get_item(i).ok().filter(|a| !a.is_none())
}

// ---------------------------------------------------------------------------------------------
// The module.

fn add<F, R>(m: &Bound<'_, PyModule>, name: &'static CStr, doc: &'static CStr, f: F) -> PyResult<()>
where
    F: Fn(&Bound<'_, PyTuple>, Option<&Bound<'_, PyDict>>) -> R + Send + Sync + 'static,
    for<'p> R: pyo3::impl_::callback::IntoPyCallbackOutput<'p, *mut pyo3::ffi::PyObject>,
{
    let func = PyCFunction::new_closure(m.py(), Some(name), Some(doc), f)?;
    m.add(name.to_str().expect("ASCII"), func)
}

/// The module's definition: single-phase initialisation needs a module made from one
/// (`PyModule_Create`), which `PyModule::new` does not give.
static mut MODULE_DEF: pyo3::ffi::PyModuleDef = pyo3::ffi::PyModuleDef {
    m_base: pyo3::ffi::PyModuleDef_HEAD_INIT,
    m_name: c"dptune._dptune".as_ptr(),
    m_doc: c"dptune's Rust library: plain functions on plain data (see dptune.accounting, dptune.tuners, dptune.results)".as_ptr(),
    m_size: -1,
    m_methods: std::ptr::null_mut(),
    m_slots: std::ptr::null_mut(),
    m_traverse: None,
    m_clear: None,
    m_free: None,
};

fn make_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    // SAFETY: the definition is static and handed to the interpreter once, at import, with
    // the GIL held; the result is a new reference or NULL with an exception set.
    let m = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyModule_Create(std::ptr::addr_of_mut!(MODULE_DEF)),
        )?
    };
    let m = m
        .cast_into::<PyModule>()
        .map_err(|_| value_error("PyModule_Create did not give a module"))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_PLD_INTERVAL", DEFAULT_INTERVAL)?;

    add(
        &m,
        c"rdp_epsilon",
        c"rdp_epsilon(events, orders, delta) -> (epsilon, delta, order)",
        |a, _| -> PyResult<Py<PyAny>> {
            let orders = orders_of(&a.get_item(1)?)?;
            let delta: f64 = arg(a, 2)?;
            let py = a.py();
            match rdp_total(&a.get_item(0)?, &orders)? {
                Some(c) => {
                    bound_tuple(py, &rdp_accountant(orders).epsilon(&c, delta).map_err(err)?)
                }
                None => Ok((0.0, delta, None::<f64>)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()),
            }
        },
    )?;
    add(
        &m,
        c"rdp_delta",
        c"rdp_delta(events, orders, epsilon) -> (epsilon, delta, order)",
        |a, _| -> PyResult<Py<PyAny>> {
            let orders = orders_of(&a.get_item(1)?)?;
            let epsilon: f64 = arg(a, 2)?;
            let py = a.py();
            match rdp_total(&a.get_item(0)?, &orders)? {
                Some(c) => {
                    bound_tuple(py, &rdp_accountant(orders).delta(&c, epsilon).map_err(err)?)
                }
                None => Ok((epsilon, 0.0, None::<f64>)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()),
            }
        },
    )?;
    add(
        &m,
        c"rdp_curve",
        c"rdp_curve(events, orders: list[float]) -> list[float]: the composed RDP at each order",
        |a, _| -> PyResult<Vec<f64>> {
            let list: Vec<f64> = arg(a, 1)?;
            let orders = Orders::List(list.clone());
            match rdp_total(&a.get_item(0)?, &orders)? {
                Some(c) => list.iter().map(|&o| c.eval(o).map_err(err)).collect(),
                None => Ok(vec![0.0; list.len()]),
            }
        },
    )?;
    add(&m, c"dpsgd_epsilon", c"dpsgd_epsilon(q, sigma, steps, delta, sampling, accountant, orders) -> (epsilon, delta, order)", |a, _| -> PyResult<Py<PyAny>> {
        let (q, sigma, steps, delta): (f64, f64, u64, f64) = (arg(a, 0)?, arg(a, 1)?, arg(a, 2)?, arg(a, 3)?);
        let sampling = sampling_of(&arg::<String>(a, 4)?)?;
        let run = DpSgd::with_sampling(sampling, q, sigma, steps).map_err(err)?;
        let b = match arg::<String>(a, 5)?.as_str() {
            "rdp" => rdp_accountant(orders_of(&a.get_item(6)?)?).epsilon(&run.rdp(), delta),
            "pld" => composed_epsilon(&[PldMechanism::dpsgd(&run)], delta, DEFAULT_INTERVAL),
            other => return Err(value_error(format!("invalid accountant = {other:?}: must be \"rdp\" or \"pld\""))),
        }
        .map_err(err)?;
        bound_tuple(a.py(), &b)
    })?;
    add(&m, c"calibrate_dpsgd", c"calibrate_dpsgd(q, steps, target_epsilon, delta, sampling, accountant, orders) -> (sigma, epsilon, delta, order)", |a, _| -> PyResult<(f64, f64, f64, Option<f64>)> {
        let (q, steps, target, delta): (f64, u64, f64, f64) = (arg(a, 0)?, arg(a, 1)?, arg(a, 2)?, arg(a, 3)?);
        let sampling = sampling_of(&arg::<String>(a, 4)?)?;
        let c = match arg::<String>(a, 5)?.as_str() {
            "rdp" => calibrate_dpsgd_noise(sampling, q, steps, target, delta, &rdp_accountant(orders_of(&a.get_item(6)?)?)),
            "pld" => calibrate_dpsgd_noise_pld(sampling, q, steps, target, delta, DEFAULT_INTERVAL),
            other => return Err(value_error(format!("invalid accountant = {other:?}: must be \"rdp\" or \"pld\""))),
        }
        .map_err(err)?;
        Ok((c.value, c.bound.epsilon, c.bound.delta, c.bound.order))
    })?;

    add(
        &m,
        c"pld_new",
        c"pld_new(interval) -> handle",
        |a, _| -> PyResult<Py<PyAny>> {
            let acc = PldAccountant::new(arg(a, 0)?).map_err(err)?;
            Ok(
                PyCapsule::new_with_value(a.py(), Mutex::new(acc), PLD_CAPSULE)?
                    .into_any()
                    .unbind(),
            )
        },
    )?;
    add(
        &m,
        c"pld_compose",
        c"pld_compose(handle, event, count)",
        |a, _| -> PyResult<()> {
            let h0 = a.get_item(0)?;
            let acc: &Mutex<PldAccountant> = capsule(&h0, PLD_CAPSULE)?;
            let count: u64 = arg(a, 2)?;
            let mut parts = Vec::new();
            if let Some(e) = event_of(&a.get_item(1)?)? {
                Pld::parts(&e, 1, &mut parts).map_err(err)?;
            }
            // Composed on a copy: a failure midway leaves the accountant as it was.
            let mut next = lock(acc)?.clone();
            for (mech, n) in parts {
                let times = n.checked_mul(count).ok_or_else(|| {
                    value_error("invalid count: the composition's count overflows")
                })?;
                if times > 0 {
                    next.compose(mech, times).map_err(err)?;
                }
            }
            *lock(acc)? = next;
            Ok(())
        },
    )?;
    add(
        &m,
        c"pld_epsilon",
        c"pld_epsilon(handle, delta) -> (epsilon, delta, None)",
        |a, _| -> PyResult<Py<PyAny>> {
            let h0 = a.get_item(0)?;
            let acc: &Mutex<PldAccountant> = capsule(&h0, PLD_CAPSULE)?;
            let b = lock(acc)?.epsilon(arg(a, 1)?).map_err(err)?;
            bound_tuple(a.py(), &b)
        },
    )?;
    add(
        &m,
        c"pld_delta",
        c"pld_delta(handle, epsilon) -> (epsilon, delta, None)",
        |a, _| -> PyResult<Py<PyAny>> {
            let h0 = a.get_item(0)?;
            let acc: &Mutex<PldAccountant> = capsule(&h0, PLD_CAPSULE)?;
            let b = lock(acc)?.delta(arg(a, 1)?).map_err(err)?;
            bound_tuple(a.py(), &b)
        },
    )?;

    add(&m, c"tuner_guarantee", c"tuner_guarantee(tuner, space, run, delta, orders, declarations=None) -> (epsilon, delta, theorem, name, params)", |a, _| -> PyResult<(f64, f64, String, String, String)> {
        let tuner = tuner_of(&a.get_item(0)?)?;
        let declared = declarations(space_of(&a.get_item(1)?)?, &a.get_item(2)?, opt_arg(a, 5).as_ref())?;
        let orders = {
            let o = a.get_item(4)?;
            if o.is_none() { Orders::Continuous } else { orders_of(&o)? }
        };
        let g = tuner.guarantee(&declared, arg(a, 3)?, &rdp_accountant(orders)).map_err(err)?;
        Ok((g.epsilon, g.delta, g.theorem, tuner.name().to_string(), tuner.params()))
    })?;
    add(
        &m,
        c"session_new",
        c"session_new(tuner, space, run, seed, declarations=None) -> handle",
        |a, _| -> PyResult<Py<PyAny>> {
            let (state, rng, seed) = session_start(a)?;
            let history = History::default();
            let s = TuningSession {
                state,
                rng,
                seed,
                history,
            };
            Ok(
                PyCapsule::new_with_value(a.py(), Mutex::new(s), SESSION_CAPSULE)?
                    .into_any()
                    .unbind(),
            )
        },
    )?;
    add(
        &m,
        c"session_ask",
        c"session_ask(handle) -> ('run', index, hyper, what, kind, payload) | ('wait',) | ('done',)",
        |a, _| -> PyResult<Py<PyAny>> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let mut s = lock(s)?;
            let TuningSession {
                state,
                rng,
                history,
                ..
            } = &mut *s;
            let py = a.py();
            Ok(match history.ask(state, rng).map_err(err)? {
                Next::Run(trial) => run_tuple(py, &trial)?,
                Next::Wait => ("wait",).into_pyobject(py)?.into_any().unbind(),
                Next::Done => ("done",).into_pyobject(py)?.into_any().unbind(),
            })
        },
    )?;
    add(
        &m,
        c"session_tell",
        c"session_tell(handle, index, value, kind='score' | 'utilities' | 'matrix')",
        |a, _| -> PyResult<()> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let index: u64 = arg(a, 1)?;
            let kind = match opt_arg(a, 3) {
                Some(k) => k.extract::<String>()?,
                None => "score".into(),
            };
            let told = match kind.as_str() {
                "score" => Told::Score(arg(a, 2)?),
                "utilities" => Told::Utilities(arg(a, 2)?),
                "matrix" => Told::Matrix(arg(a, 2)?),
                other => return Err(value_error(format!("unknown kind of value {other:?}"))),
            };
            let mut s = lock(s)?;
            let TuningSession { state, history, .. } = &mut *s;
            if state.tells_atomically() {
                return history.tell(state, index, told).map_err(err);
            }
            // The others are told on a copy: a tell that fails midway (a table the algorithm
            // refuses) leaves the session as it was (and the history records only accepted
            // tells).
            let mut next = state.clone();
            history.tell(&mut next, index, told).map_err(err)?;
            *state = next;
            Ok(())
        },
    )?;
    add(
        &m,
        c"session_finish",
        c"session_finish(handle) -> (chosen, released_score, runs, fallback)",
        |a, _| -> PyResult<Finished> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let o = lock(s)?.state.finish().map_err(err)?;
            Ok((o.chosen, o.released_score, o.runs, o.fallback))
        },
    )?;
    add(
        &m,
        c"session_info",
        c"session_info(handle) -> (planned_runs, pending indices, state as JSON)",
        |a, _| -> PyResult<(Option<u64>, Vec<u64>, String)> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let s = lock(s)?;
            let json = serde_json::to_string(&s.state).map_err(|e| value_error(e.to_string()))?;
            Ok((
                s.state.planned_runs(),
                s.state.pending().iter().map(|t| t.index).collect(),
                json,
            ))
        },
    )?;

    add(
        &m,
        c"session_pending",
        c"session_pending(handle) -> [('run', index, hyper, what, kind, payload)], the evaluations asked and not yet told",
        |a, _| -> PyResult<Vec<Py<PyAny>>> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let s = lock(s)?;
            s.state
                .pending()
                .iter()
                .map(|t| run_tuple(a.py(), t))
                .collect()
        },
    )?;
    add(
        &m,
        c"session_save",
        c"session_save(handle) -> (state as JSON, history as JSON, seed, stream position in words)",
        |a, _| -> PyResult<(String, String, u64, u64)> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<TuningSession> = capsule(&h0, SESSION_CAPSULE)?;
            let s = lock(s)?;
            let (state, seed, position) = saved(&s.state, s.seed, &s.rng)?;
            let history =
                serde_json::to_string(&s.history).map_err(|e| value_error(e.to_string()))?;
            Ok((state, history, seed, position))
        },
    )?;
    add(
        &m,
        c"session_load",
        c"session_load(tuner, space, run, seed, declarations, state as JSON, history as JSON, stream position) -> handle; refused unless the session started afresh and taken through the history is the state, its stream at the position",
        |a, _| -> PyResult<Py<PyAny>> {
            let (start, start_rng, seed) = session_start(a)?;
            let json: String = arg(a, 5)?;
            let state: State = serde_json::from_str(&json)
                .map_err(|e| value_error(format!("invalid state: not a saved session ({e})")))?;
            let history: History = serde_json::from_str(&arg::<String>(a, 6)?).map_err(|e| {
                value_error(format!("invalid state: not a saved session's history ({e})"))
            })?;
            let position: u64 = arg(a, 7)?;
            // Believed only as re-derived: K, the best run, the counters and the stream are
            // what the recorded asks and tells give, or the load is refused.
            let state = history
                .check(start, start_rng, &state, u128::from(position))
                .map_err(|e| value_error(format!("invalid state: {e}")))?;
            let s = TuningSession {
                state,
                rng: session_stream(seed, position),
                seed,
                history,
            };
            Ok(
                PyCapsule::new_with_value(a.py(), Mutex::new(s), SESSION_CAPSULE)?
                    .into_any()
                    .unbind(),
            )
        },
    )?;
    add(
        &m,
        c"front_new",
        c"front_new(plan, dims: [(name, low, high, integer, log)], seed) -> handle; plan: ('random', count) | ('grid', points) | ('dpareto', initial, iterations, candidates, acquisition)",
        |a, _| -> PyResult<Py<PyAny>> {
            let plan = a.get_item(0)?;
            let dims: Vec<(String, f64, f64, bool, bool)> = arg(a, 1)?;
            let dims = dims
                .iter()
                .map(|(name, low, high, integer, log)| {
                    let mut d = if *log {
                        Dimension::log(name, *low, *high)
                    } else {
                        Dimension::new(name, *low, *high, *integer)
                    }
                    .map_err(err)?;
                    d.integer = *integer;
                    Ok(d)
                })
                .collect::<PyResult<Vec<_>>>()?;
            let search = match tag(&plan)?.as_str() {
                "random" => FrontSearch::sample(&dims, Design::Uniform, field(&plan, 1)?),
                "grid" => FrontSearch::grid(&dims, field(&plan, 1)?),
                "dpareto" => {
                    let acquisition = match field::<String>(&plan, 4)?.as_str() {
                        "hvpoi" => Acquisition::HvPoi,
                        "ehvi" => Acquisition::Ehvi,
                        other => {
                            return Err(value_error(format!(
                                "invalid acquisition = {other:?}: must be \"hvpoi\" or \"ehvi\""
                            )))
                        }
                    };
                    let options = DparetoOptions {
                        initial: field(&plan, 1)?,
                        iterations: field(&plan, 2)?,
                        candidates: field(&plan, 3)?,
                        acquisition,
                        ..DparetoOptions::default()
                    };
                    FrontSearch::dpareto(&dims, &options, Design::Uniform)
                }
                other => return Err(value_error(format!("unknown front search {other:?}"))),
            }
            .map_err(err)?;
            let seed: u64 = arg(a, 2)?;
            front_handle(
                a.py(),
                FrontSession {
                    search,
                    rng: session_stream(seed, 0),
                    seed,
                },
            )
        },
    )?;
    add(
        &m,
        c"front_ask",
        c"front_ask(handle) -> the point to evaluate (its values per dimension) | None when the search is over",
        |a, _| -> PyResult<Option<Vec<f64>>> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<FrontSession> = capsule(&h0, FRONT_CAPSULE)?;
            let mut s = lock(s)?;
            let FrontSession { search, rng, .. } = &mut *s;
            // On copies: a fit that fails leaves the search and its stream as they were.
            let (mut next, mut next_rng) = (search.clone(), rng.clone());
            let asked = next.ask(&PythonOracle, &mut next_rng).map_err(err)?;
            (*search, *rng) = (next, next_rng);
            Ok(asked)
        },
    )?;
    add(
        &m,
        c"front_tell",
        c"front_tell(handle, epsilon, errors)",
        |a, _| -> PyResult<()> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<FrontSession> = capsule(&h0, FRONT_CAPSULE)?;
            let observed = Observation {
                epsilon: arg(a, 1)?,
                errors: arg(a, 2)?,
            };
            let told = lock(s)?.search.tell(observed).map_err(err);
            told
        },
    )?;
    add(
        &m,
        c"front_evaluations",
        c"front_evaluations(handle) -> [(values, epsilon, mean error, errors, proposed, acquisition)], the indices on the front, planned count",
        |a, _| -> PyResult<Py<PyAny>> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<FrontSession> = capsule(&h0, FRONT_CAPSULE)?;
            let s = lock(s)?;
            let done = s.search.evaluations();
            let rows: Vec<FrontRow> = done
                .iter()
                .map(|e| {
                    (
                        e.lambda.clone(),
                        e.objectives[0],
                        e.objectives[1],
                        e.errors.clone(),
                        !e.random,
                        e.acquisition,
                    )
                })
                .collect();
            let points: Vec<Objectives> = done.iter().map(|e| e.objectives).collect();
            let front = if points.is_empty() {
                Vec::new()
            } else {
                pareto_front(&points).map_err(err)?
            };
            Ok((rows, front).into_pyobject(a.py())?.into_any().unbind())
        },
    )?;
    add(
        &m,
        c"front_save",
        c"front_save(handle) -> (state as JSON, seed, stream position in words)",
        |a, _| -> PyResult<(String, u64, u64)> {
            let h0 = a.get_item(0)?;
            let s: &Mutex<FrontSession> = capsule(&h0, FRONT_CAPSULE)?;
            let s = lock(s)?;
            saved(&s.search, s.seed, &s.rng)
        },
    )?;
    add(
        &m,
        c"front_load",
        c"front_load(state as JSON, seed, stream position) -> handle",
        |a, _| -> PyResult<Py<PyAny>> {
            let json: String = arg(a, 0)?;
            let search: FrontSearch = serde_json::from_str(&json).map_err(|e| {
                value_error(format!("invalid state: not a saved front search ({e})"))
            })?;
            let (seed, position): (u64, u64) = (arg(a, 1)?, arg(a, 2)?);
            front_handle(
                a.py(),
                FrontSession {
                    search,
                    rng: session_stream(seed, position),
                    seed,
                },
            )
        },
    )?;
    add(
        &m,
        c"read_table",
        c"read_table(path) -> list of (column, kind, values)",
        |a, _| -> PyResult<Py<PyAny>> {
            use dptune::sim::table::{Table, Values};
            let path: std::path::PathBuf = arg(a, 0)?;
            let t = Table::read_parquet(&path).map_err(err)?;
            let py = a.py();
            let cols = PyList::empty(py);
            for (name, values) in &t.columns {
                let (kind, v) = match values {
                    Values::Str(v) => ("str", v.into_pyobject(py)?.into_any()),
                    Values::U64(v) => ("u64", v.into_pyobject(py)?.into_any()),
                    Values::F64(v) => ("f64", v.into_pyobject(py)?.into_any()),
                    Values::Bool(v) => ("bool", v.into_pyobject(py)?.into_any()),
                };
                cols.append((name, kind, v))?;
            }
            Ok(cols.into_any().unbind())
        },
    )?;
    Ok(m)
}

/// The module's entry point (single-phase initialisation, what `#[pymodule]` would write).
///
/// # Safety
/// Called by the Python interpreter, with the GIL held, when `dptune._dptune` is imported.
#[no_mangle]
pub unsafe extern "C" fn PyInit__dptune() -> *mut pyo3::ffi::PyObject {
    Python::attach(|py| match make_module(py) {
        Ok(m) => m.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    })
}
