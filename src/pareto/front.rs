//! Two-objective Pareto fronts and their hypervolume (spec 001 §1 and §5). A point is
//! (ε, error), or its transform inside the acquisition; both coordinates are minimised.
//!
//! Dominance is weak with one strict coordinate (spec §1): u dominates v when u ≤ v in both
//! coordinates and u < v in at least one, so duplicate points do not dominate each other and
//! are both kept on the front.
//!
//! The hypervolume is the spec's Lebesgue measure of the region a front dominates inside the
//! reference box, `{v ≤ r : ∃u ∈ P, u ≤ v}`. The box has no lower edge, so a point either lies
//! strictly below the reference in both coordinates and dominates the rectangle [u, r], or it
//! dominates nothing inside the box: points on or beyond the reference contribute nothing
//! (the release's "drop points with ε ≥ 10 or err ≥ 1"), and there is no partial contribution.

use crate::error::{fmt_num, Error, Range, Result};
use std::cmp::Ordering;

/// A point of a two-objective space where both coordinates are minimised: (ε, error) for the
/// yardstick, (log ε, logit error) inside the acquisition.
pub type Objectives = [f64; 2];

/// The reference (anti-ideal) point of every reported hypervolume, (ε, error) = (10, 1): one
/// reference across tuners and tasks, or the numbers cannot be compared (spec §1, §5). The
/// largest `hv_lin` is 10.
pub const HV_REFERENCE: Objectives = [10.0, 1.0];

/// `hv_log` floors ε here before taking log₁₀ (spec §5), so its x-range is [−2, 1] with the
/// default reference and a front at ε → 0 keeps a finite area (at most 3).
pub const HV_LOG_EPSILON_FLOOR: f64 = 1e-2;

/// The ε at which the readable slice `best_err_at_eps` is reported (spec §5).
pub const BEST_ERROR_EPSILONS: [f64; 6] = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0];

/// The indices of the non-dominated points, sorted by the first objective ascending (the
/// second then falls). Duplicates of a front point are all kept, in index order, so the result
/// is deterministic for any input order of ties. Infinite coordinates are allowed (an ε of +∞
/// is a non-private run); NaN is rejected.
pub fn pareto_front(points: &[Objectives]) -> Result<Vec<usize>> {
    check_ordered(points)?;
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&i, &j| lexicographic(points[i], points[j]).then(i.cmp(&j)));
    let mut front = Vec::new();
    // The last kept point holds the lowest second coordinate seen so far (the sort puts the
    // lowest second coordinate first among equal first coordinates).
    let mut last: Option<Objectives> = None;
    for i in order {
        let p = points[i];
        let keep = match last {
            None => true,
            Some(l) => p[1] < l[1] || (p[0] == l[0] && p[1] == l[1]),
        };
        if keep {
            front.push(i);
            last = Some(p);
        }
    }
    Ok(front)
}

/// A front as the step function a plot draws: its distinct corners, sorted by the first
/// objective ascending with the second strictly falling.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFront {
    corners: Vec<Objectives>,
}

impl StepFront {
    /// The front of `points` (any set; dominated points and duplicates are dropped). NaN is
    /// rejected.
    pub fn new(points: &[Objectives]) -> Result<Self> {
        let mut corners: Vec<Objectives> = pareto_front(points)?
            .into_iter()
            .map(|i| points[i])
            .collect();
        corners.dedup_by(|a, b| a[0] == b[0] && a[1] == b[1]);
        Ok(StepFront { corners })
    }

    /// The corners, first objective ascending, second strictly falling.
    pub fn corners(&self) -> &[Objectives] {
        &self.corners
    }

    /// The corners strictly below `reference` in both coordinates: the only ones that
    /// dominate part of the reference box. (A point dominated by one outside the box would
    /// itself be outside, so these are also the front of the points inside the box.)
    pub fn corners_inside(&self, reference: Objectives) -> Vec<Objectives> {
        self.corners
            .iter()
            .copied()
            .filter(|p| p[0] < reference[0] && p[1] < reference[1])
            .collect()
    }

    /// The lowest second objective among the points whose first is at most `x` (the step
    /// function's value at x); `None` when no point has a first objective that small.
    pub fn best_at(&self, x: f64) -> Option<f64> {
        let n = self.corners.partition_point(|p| p[0] <= x);
        n.checked_sub(1).map(|i| self.corners[i][1])
    }

    /// The hypervolume dominated inside the box below `reference` (see [`hypervolume`]).
    pub fn hypervolume(&self, reference: Objectives) -> Result<f64> {
        check_reference(reference)?;
        let inside = self.corners_inside(reference);
        if let Some(p) = inside.iter().find(|p| p[0].min(p[1]) == f64::NEG_INFINITY) {
            return Err(Error::invalid(
                "points",
                format!("({}, {})", p[0], p[1]),
                "pairs without -inf below the reference (such a point dominates an infinite area)",
            ));
        }
        // Sweep from left to right: corner i owns the strip from its own first coordinate to
        // the next corner's (the reference for the last), of height r₂ − its second.
        let mut area = 0.0;
        for (i, p) in inside.iter().enumerate() {
            let right = inside.get(i + 1).map_or(reference[0], |q| q[0]);
            area += (right - p[0]) * (reference[1] - p[1]);
        }
        if area.is_finite() {
            Ok(area)
        } else {
            Err(Error::Numerical(format!(
                "the hypervolume overflows: the points span more than a double can hold \
                 below the reference ({}, {})",
                fmt_num(reference[0]),
                fmt_num(reference[1])
            )))
        }
    }
}

/// The hypervolume of `points` w.r.t. `reference`: the area of `{v ≤ r : some point u ≤ v}`.
/// Points not strictly below the reference in both coordinates contribute nothing; dominated
/// points and duplicates change nothing. Exact by one sorted sweep, O(n log n).
///
/// The reference must be finite. A point below the reference with a coordinate of −∞ would
/// dominate an infinite area and is rejected, as is NaN anywhere; +∞ is allowed (such a point
/// lies outside the box).
pub fn hypervolume(points: &[Objectives], reference: Objectives) -> Result<f64> {
    StepFront::new(points)?.hypervolume(reference)
}

/// `hv_lin` of spec §5: the hypervolume of (ε, error) points w.r.t. `reference`, in linear
/// units ([`HV_REFERENCE`] = (10, 1) for every reported number, where the largest value is 10;
/// divide by 10 for `hv_norm`). ε must be in [0, ∞] (+∞: a non-private run, outside the box),
/// error in [0, 1].
pub fn hv_lin(points: &[Objectives], reference: Objectives) -> Result<f64> {
    check_epsilon_error(points)?;
    check_yardstick_reference(reference)?;
    hypervolume(points, reference)
}

/// `hv_log` of spec §5: the same area with x = log₁₀ max(ε, [`HV_LOG_EPSILON_FLOOR`]) and the
/// reference at log₁₀ of its ε, so the small-ε region, where tuners differ, weighs as much as
/// the large-ε one. With [`HV_REFERENCE`] the x-range is [−2, 1] and the largest value is 3.
/// The reference ε must exceed the floor. Points as for [`hv_lin`].
pub fn hv_log(points: &[Objectives], reference: Objectives) -> Result<f64> {
    check_epsilon_error(points)?;
    check_yardstick_reference(reference)?;
    if reference[0] <= HV_LOG_EPSILON_FLOOR {
        return Err(Error::invalid(
            "reference epsilon",
            fmt_num(reference[0]),
            format!(
                "a number > {} (hv_log's floor on epsilon)",
                HV_LOG_EPSILON_FLOOR
            ),
        ));
    }
    let mapped: Vec<Objectives> = points
        .iter()
        .map(|p| [libm::log10(p[0].max(HV_LOG_EPSILON_FLOOR)), p[1]])
        .collect();
    hypervolume(&mapped, [libm::log10(reference[0]), reference[1]])
}

/// `best_err_at_eps` of spec §5: the lowest error among the (ε, error) points with ε ≤
/// `epsilon` (the step front read at ε); `None` when every point has a larger ε.
pub fn best_error_at(points: &[Objectives], epsilon: f64) -> Result<Option<f64>> {
    check_epsilon_error(points)?;
    let epsilon = Range::NonNegative.check("epsilon", epsilon)?;
    Ok(StepFront::new(points)?.best_at(epsilon))
}

/// Lexicographic order on (first, second); NaN never reaches it (rejected before).
fn lexicographic(a: Objectives, b: Objectives) -> Ordering {
    a[0].partial_cmp(&b[0])
        .unwrap_or(Ordering::Equal)
        .then(a[1].partial_cmp(&b[1]).unwrap_or(Ordering::Equal))
}

/// Every coordinate is a number: NaN cannot be ordered.
fn check_ordered(points: &[Objectives]) -> Result<()> {
    match points.iter().position(|p| p[0].is_nan() || p[1].is_nan()) {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            "points",
            format!("({}, {}) at index {i}", points[i][0], points[i][1]),
            "pairs of numbers (NaN cannot be ordered)",
        )),
    }
}

fn check_reference(reference: Objectives) -> Result<()> {
    if reference.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(Error::invalid(
            "reference",
            format!("({}, {})", reference[0], reference[1]),
            "a pair of finite numbers",
        ))
    }
}

/// (ε, error) with ε ∈ [0, ∞] and error ∈ [0, 1].
fn check_epsilon_error(points: &[Objectives]) -> Result<()> {
    let bad = points
        .iter()
        .position(|p| p[0].is_nan() || p[0] < 0.0 || !(0.0..=1.0).contains(&p[1]));
    match bad {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            "points",
            format!(
                "(epsilon, error) = ({}, {}) at index {i}",
                points[i][0], points[i][1]
            ),
            "epsilon in [0, inf] and error in [0, 1]",
        )),
    }
}

fn check_yardstick_reference(reference: Objectives) -> Result<()> {
    Range::Positive.check("reference epsilon", reference[0])?;
    Range::Positive.check("reference error", reference[1])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::Rng;

    /// The definition, pairwise: indices no other point dominates, sorted by (x, y, index).
    fn brute_front(points: &[Objectives]) -> Vec<usize> {
        let dominates = |u: Objectives, v: Objectives| {
            u[0] <= v[0] && u[1] <= v[1] && (u[0] < v[0] || u[1] < v[1])
        };
        let mut front: Vec<usize> = (0..points.len())
            .filter(|&i| !points.iter().any(|&u| dominates(u, points[i])))
            .collect();
        front.sort_by(|&i, &j| lexicographic(points[i], points[j]).then(i.cmp(&j)));
        front
    }

    /// Random points on a coarse grid (many ties and duplicates), some outside the box.
    fn grid_points(rng: &mut impl Rng, n: usize, cells: u32) -> Vec<Objectives> {
        (0..n)
            .map(|_| {
                [
                    rng.random_range(0..=cells) as f64 * 10.0 / 64.0,
                    rng.random_range(0..=cells) as f64 / 64.0,
                ]
            })
            .collect()
    }

    #[test]
    fn front_keeps_duplicates_and_sorts_by_the_first_objective() {
        let pts = [
            [1.0, 1.0],
            [1.0, 1.0],
            [0.0, 2.0],
            [2.0, 0.5],
            [1.0, 2.0],
            [2.0, 1.0],
            [3.0, 0.5],
            [f64::INFINITY, 0.1],
        ];
        assert_eq!(pareto_front(&pts).unwrap(), vec![2, 0, 1, 3, 7]);
        assert_eq!(pareto_front(&[]).unwrap(), Vec::<usize>::new());
        // -0.0 and 0.0 are the same point: both kept.
        assert_eq!(
            pareto_front(&[[0.0, 1.0], [-0.0, 1.0]]).unwrap(),
            vec![0, 1]
        );
    }

    #[test]
    fn front_matches_the_pairwise_definition_on_random_sets() {
        let mut rng = stream(19, &[1]);
        for trial in 0..300 {
            let n = rng.random_range(0..40);
            let cells = if trial % 2 == 0 { 6 } else { 1000 };
            let pts = grid_points(&mut rng, n, cells);
            assert_eq!(pareto_front(&pts).unwrap(), brute_front(&pts), "{pts:?}");
        }
    }

    #[test]
    fn spec_6_3_single_point_hypervolume() {
        for err in [0.0, 0.2, 0.75, 1.0] {
            let hv = hv_lin(&[[0.0, err]], HV_REFERENCE).unwrap();
            assert!((hv - 10.0 * (1.0 - err)).abs() < 1e-15, "{err}: {hv}");
            // hv_log: x from −2 (the floor) to 1.
            let hv = hv_log(&[[0.0, err]], HV_REFERENCE).unwrap();
            assert!((hv - 3.0 * (1.0 - err)).abs() < 1e-12, "{err}: {hv}");
        }
        assert_eq!(hv_lin(&[], HV_REFERENCE).unwrap(), 0.0);
    }

    #[test]
    fn spec_6_3_monotone_and_blind_to_dominated_points() {
        let mut rng = stream(19, &[2]);
        for _ in 0..100 {
            let mut pts: Vec<Objectives> = Vec::new();
            let mut prev = 0.0;
            for _ in 0..30 {
                pts.push([rng.random_range(0.0..12.0), rng.random_range(0.0..1.0)]);
                let hv = hv_lin(&pts, HV_REFERENCE).unwrap();
                assert!(hv >= prev, "fell from {prev} to {hv}");
                prev = hv;
                // A point dominated by one already there changes nothing, exactly.
                let u = pts[rng.random_range(0..pts.len())];
                let dominated = [
                    u[0] + rng.random_range(0.0..2.0),
                    (u[1] + rng.random_range(0.0..0.3)).min(1.0),
                ];
                let mut more = pts.clone();
                more.push(dominated);
                assert_eq!(hv_lin(&more, HV_REFERENCE).unwrap(), hv);
            }
        }
    }

    /// Exact area by counting grid cells: with coordinates on a 1/64 grid (10/64 in ε), a cell
    /// is dominated exactly when its lower-left corner is.
    #[test]
    fn hypervolume_equals_the_dominated_grid_area() {
        let mut rng = stream(19, &[3]);
        for _ in 0..200 {
            let n = rng.random_range(0..25);
            let pts = grid_points(&mut rng, n, 70); // up to 70/64: some outside the box
            let mut cells = 0u32;
            for i in 0..64 {
                for j in 0..64 {
                    let corner = [i as f64 * 10.0 / 64.0, j as f64 / 64.0];
                    if pts.iter().any(|u| u[0] <= corner[0] && u[1] <= corner[1]) {
                        cells += 1;
                    }
                }
            }
            let exact = cells as f64 * (10.0 / 64.0) * (1.0 / 64.0);
            let hv = hypervolume(&pts, HV_REFERENCE).unwrap();
            assert!((hv - exact).abs() < 1e-12, "{hv} vs {exact} for {pts:?}");
        }
    }

    /// Properties over random continuous sets: order-free, within the box, between the larger
    /// part and the sum of the parts, and equal to the sum of exclusive strips of the front.
    #[test]
    fn hypervolume_properties_on_random_sets() {
        let mut rng = stream(19, &[4]);
        let r = [3.0, 2.0];
        for _ in 0..300 {
            let mut gen = |n: usize| -> Vec<Objectives> {
                (0..n)
                    .map(|_| [rng.random_range(-1.0..4.0), rng.random_range(-0.5..2.5)])
                    .collect()
            };
            let a = gen(15);
            let b = gen(10);
            let (ha, hb) = (hypervolume(&a, r).unwrap(), hypervolume(&b, r).unwrap());
            let union: Vec<Objectives> = a.iter().chain(&b).copied().collect();
            let hu = hypervolume(&union, r).unwrap();
            assert!(hu >= ha.max(hb) - 1e-12 && hu <= ha + hb + 1e-12);
            // Within the box spanned from the lowest coordinates to the reference.
            let lo = union
                .iter()
                .fold([r[0], r[1]], |m, p| [m[0].min(p[0]), m[1].min(p[1])]);
            assert!(hu <= (r[0] - lo[0]) * (r[1] - lo[1]) + 1e-12);
            // Reversed order, same value.
            let rev: Vec<Objectives> = union.iter().rev().copied().collect();
            assert!((hypervolume(&rev, r).unwrap() - hu).abs() < 1e-12);
            // Inclusion–exclusion over a pair of points, by hand.
            let (p, q) = (a[0], a[1]);
            let rect = |u: Objectives| (r[0] - u[0]).max(0.0) * (r[1] - u[1]).max(0.0);
            let both = rect([p[0].max(q[0]), p[1].max(q[1])]);
            let pair = hypervolume(&[p, q], r).unwrap();
            assert!((pair - (rect(p) + rect(q) - both)).abs() < 1e-12);
        }
    }

    #[test]
    fn hv_log_floors_small_epsilons() {
        let a = hv_log(&[[1e-3, 0.4], [1.0, 0.2]], HV_REFERENCE).unwrap();
        let b = hv_log(&[[1e-2, 0.4], [1.0, 0.2]], HV_REFERENCE).unwrap();
        assert_eq!(a, b);
        // By hand: strip [−2, 0) at height 0.6, then [0, 1) at height 0.8.
        assert!((a - (2.0 * 0.6 + 0.8)).abs() < 1e-12, "{a}");
        // Non-private (ε = ∞) and beyond-reference points add nothing.
        let c = hv_log(
            &[[1e-3, 0.4], [1.0, 0.2], [f64::INFINITY, 0.0], [20.0, 0.0]],
            HV_REFERENCE,
        )
        .unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn best_error_reads_the_step_front() {
        let pts = [[0.5, 0.3], [0.1, 0.5], [2.0, 0.1], [1.0, 0.35], [2.0, 0.2]];
        assert_eq!(best_error_at(&pts, 0.05).unwrap(), None);
        assert_eq!(best_error_at(&pts, 0.1).unwrap(), Some(0.5));
        assert_eq!(best_error_at(&pts, 1.5).unwrap(), Some(0.3));
        assert_eq!(best_error_at(&pts, 8.0).unwrap(), Some(0.1));
        let mut rng = stream(19, &[5]);
        for _ in 0..200 {
            let pts = grid_points(&mut rng, 20, 64);
            let front = StepFront::new(&pts).unwrap();
            for e in BEST_ERROR_EPSILONS {
                let brute = pts
                    .iter()
                    .filter(|p| p[0] <= e)
                    .map(|p| p[1])
                    .fold(None, |m: Option<f64>, y| Some(m.map_or(y, |m| m.min(y))));
                assert_eq!(front.best_at(e), brute);
            }
        }
    }

    #[test]
    fn invalid_points_and_references_are_named() {
        let msg = pareto_front(&[[0.0, 1.0], [f64::NAN, 0.0]])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("points") && msg.contains("index 1"), "{msg}");
        assert!(hypervolume(&[[f64::NEG_INFINITY, 0.0]], [1.0, 1.0]).is_err());
        // Outside the box, −∞ dominates nothing there.
        assert_eq!(
            hypervolume(&[[f64::NEG_INFINITY, 5.0]], [1.0, 1.0]).unwrap(),
            0.0
        );
        assert!(hypervolume(&[[0.0, f64::NEG_INFINITY]], [1.0, 1.0]).is_err());
        assert!(hypervolume(&[[0.0, 0.0]], [f64::INFINITY, 1.0]).is_err());
        assert!(hypervolume(&[[-1e308, -1e308]], [1e308, 1e308]).is_err());
        for bad in [
            [-0.1, 0.5],
            [1.0, 1.5],
            [1.0, -0.1],
            [f64::NAN, 0.5],
            [1.0, f64::NAN],
        ] {
            let msg = hv_lin(&[bad], HV_REFERENCE).unwrap_err().to_string();
            assert!(msg.contains("epsilon in [0, inf]"), "{msg}");
        }
        assert!(hv_lin(&[[1.0, 0.5]], [0.0, 1.0]).is_err());
        assert!(hv_log(&[[1.0, 0.5]], [0.01, 1.0]).is_err());
        assert!(best_error_at(&[[1.0, 0.5]], f64::NAN).is_err());
        // +∞ ε is a valid (non-private) point.
        assert_eq!(hv_lin(&[[f64::INFINITY, 0.0]], HV_REFERENCE).unwrap(), 0.0);
    }
}
